static const char help[] = "Grid mode (NetSetGrid(), netspatial.c) against batch mode on the gathered fields:\n"
                           "  the Net under test (-net_layers or -net_graph from the options) runs on a 2-D or 3-D DMDA over the ranks (or over each of\n"
                           "  -net_spatial_groups G groups of ranks, each with its own fields); the reference, the same layer list in batch\n"
                           "  mode with input shape (grid..., c) and the same parameters, runs on each rank alone with all G nf fields. The\n"
                           "  outputs, the input cotangent, the parameter gradient and a JVP must agree to <= 1e-13 relative (training mode,\n"
                           "  so batchnorm uses the statistics of all fields). At -net_precision single or bfloat16 the reference stays\n"
                           "  double and the bound is 10 L u (L nodes, u = 2^-24 or 2^-8 the unit round-off of the stored values), 20 L u\n"
                           "  for the second-order products (which read the rounded values of the forward and the JVP).\n"
                           "Options: -grid HxW or DxHxW (slowest first), -channels C, -nfields nf (per group), -uneven (ownership ranges\n"
                           "  1, 2, 3, ... in proportion, the last rank the rest), -test_jacobian (NetTestJacobian: dot-product <= 1e-12,\n"
                           "  finite differences <= 1e-6; at low precision its bounds from u, and the float halo exchanges' adjoint identity),\n"
                           "  -test_secondorder (the exact Hessian-vector product and the input's second-order cotangent agree to\n"
                           "  <= 1e-12), -test_hessian (the curvature of an mse loss: below), -periodic (a periodic DMDA, whose windows\n"
                           "  wrap around: only for the error tests, batch\n"
                           "  mode pads with zeros), -view, -save_load FILE (the grid-mode Net saved to FILE, and the reference loaded from it\n"
                           "  with -ref_net_input_shape the whole field: format 4 records the grid).\n"
                           "-test_hessian: the Gauss-Newton and exact Hessian-vector products of the mean mse loss over the batch\n"
                           "  (targets at the output's global positions, wherever the output lies: on the group's first rank after a\n"
                           "  globalavgpool, on another grid or other blocks after strided or joined nodes) equal batch mode's to <= 1e-10\n"
                           "  relative; <Hv,w> = <v,Hw> to 1e-12 |Hv||w|; <Gv,v> >= -1e-12 |Gv||v|; the product in chunks of one field\n"
                           "  equals the one-pass product (1e-12; -nfields >= 2, no batchnorm in training mode); the exact product\n"
                           "  equals central differences of the gradient to 1e-6. At single or bfloat16: 20 L u against batch mode,\n"
                           "  10 L u for symmetry and chunks, no finite differences (the batch-mode reference is double).\n"
                           "-test_memory B (needs -malloc_debug, which tests/run gives): the first training step (NetForward(), NetBackward()\n"
                           "  with a gradient, no input cotangent) counted by PETSc's tracing allocator: its high-water mark above what was\n"
                           "  held before, less the stored values and their cotangents (the value store's arrays), is the step's workspace;\n"
                           "  in units of the largest value of the batch on a rank widened to float, it must be at most B.\n"
                           "-param_ratio r: no rank holds more than r times the parameters of the nodes it runs (its slice of theta and the\n"
                           "  copies theta_rep, grad_rep, dtheta_rep; -net_parallel sharded with -net_stages keeps the slice only).\n";

#include <petnet.h>
#include <petnet/private/netimpl.h> /* -test_memory: the value store's sizes */
#include "testheld.h"
#include <petscdmda.h>

/* a deterministic value of field gf at global grid point p, channel c (the same on every rank count) */
static PetscScalar Table(PetscInt64 gf, PetscInt64 p, PetscInt64 c, PetscInt which)
{
  return PetscSinReal(0.37 * p + 1.1 * c + 0.7 * gf + 0.11 * which + 0.1) + 0.25 * PetscCosReal(1.3 * (p % 97) * (which + 1) + 0.5 * c);
}

/* uneven ownership of n points over m ranks: in proportion to 1, 2, ..., each at least 1 */
static PetscErrorCode Uneven(PetscInt n, PetscInt m, PetscInt **own)
{
  PetscInt left = n, w = m * (m + 1) / 2;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(m, own));
  for (PetscInt i = 0; i < m; i++) {
    (*own)[i] = i == m - 1 ? left : PetscMax(1, (n * (i + 1)) / w);
    left -= (*own)[i];
  }
  PetscCheck(left >= 0 && (*own)[m - 1] >= 1, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "-uneven: grid too small for %" PetscInt_FMT " ranks", m);
  PetscFunctionReturn(0);
}

/* Fill a local array laid out as the block [lo, lo+sz) of the tensor (nf, grid..., c) of group g from Table */
static PetscErrorCode FillBlock(PetscInt nsd, const PetscInt64 N[], const PetscInt64 lo[], const PetscInt64 sz[], PetscInt g, PetscInt nf, PetscInt C, PetscInt which, PetscScalar *a)
{
  PetscInt64 np = 1;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < nsd; d++) np *= sz[d];
  for (PetscInt f = 0; f < nf; f++)
    for (PetscInt64 i = 0; i < np; i++) {
      PetscInt64 r = i, gp = 0, idx[3];

      for (PetscInt d = nsd - 1; d >= 0; d--) {
        idx[d] = lo[d] + r % sz[d];
        r /= sz[d];
      }
      for (PetscInt d = 0; d < nsd; d++) gp = gp * N[d] + idx[d];
      for (PetscInt c = 0; c < C; c++) *a++ = Table(g * nf + f, gp, c, which);
    }
  PetscFunctionReturn(0);
}

/* max over ranks of |a - ref at the block's global positions| and of |ref| */
static PetscErrorCode CompareBlock(MPI_Comm comm, PetscInt nsd, const PetscInt64 N[], const PetscInt64 lo[], const PetscInt64 sz[], PetscInt g, PetscInt nf, PetscInt C, const PetscScalar *a, Vec ref, PetscReal *rel)
{
  const PetscScalar *r;
  PetscInt64         np = 1, Np = 1;
  PetscReal          d[2] = {0, 0};
  PetscInt           M;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < nsd; d++) {
    np *= sz[d];
    Np *= N[d];
  }
  PetscCall(VecGetLocalSize(ref, &M));
  PetscCall(VecGetArrayRead(ref, &r));
  for (PetscInt i = 0; i < M; i++) d[1] = PetscMax(d[1], PetscAbsScalar(r[i]));
  for (PetscInt f = 0; f < nf; f++)
    for (PetscInt64 i = 0; i < np; i++) {
      PetscInt64 q = i, gp = 0, idx[3];

      for (PetscInt e = nsd - 1; e >= 0; e--) {
        idx[e] = lo[e] + q % sz[e];
        q /= sz[e];
      }
      for (PetscInt e = 0; e < nsd; e++) gp = gp * N[e] + idx[e];
      for (PetscInt c = 0; c < C; c++, a++) d[0] = PetscMax(d[0], PetscAbsScalar(*a - r[((g * nf + f) * Np + gp) * C + c]));
    }
  PetscCall(VecRestoreArrayRead(ref, &r));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, d, 2, MPIU_REAL, MPIU_MAX, comm));
  *rel = d[0] / PetscMax(d[1], 1e-300);
  PetscFunctionReturn(0);
}

/* NetForwardBackward()'s output cotangent: the rows r0 .. r0 + n - 1 of a given dY (nout entries a row) */
typedef struct {
  const PetscScalar *a;
  PetscInt           nout;
} CotangentRows;

static PetscErrorCode GiveCotangent(Net net, PetscInt r0, PetscInt n, const PetscScalar y[], PetscScalar dy[], void *ctx)
{
  const CotangentRows *rows = (const CotangentRows *)ctx;

  PetscFunctionBegin;
  PetscCall(PetscArraycpy(dy, rows->a + (size_t)r0 * rows->nout, (size_t)n * rows->nout));
  PetscFunctionReturn(0);
}

static PetscErrorCode Check(MPI_Comm comm, const char what[], PetscReal rel, PetscReal tol)
{
  PetscFunctionBegin;
  PetscCall(PetscPrintf(comm, "%-28s %s\n", what, rel <= tol ? "agrees" : "DIFFERS"));
  PetscCall(PetscInfo(NULL, "%s: relative difference %g (tolerance %g)\n", what, (double)rel, (double)tol));
  PetscCheck(rel <= tol, comm, PETSC_ERR_PLIB, "%s: grid mode differs from batch mode by %g relative (tolerance %g)", what, (double)rel, (double)tol);
  PetscFunctionReturn(0);
}

/* the whole parameter-like Vec v on every rank, as a sequential Vec */
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

/* the gradient of the mean loss of `net` over (X, T) at theta (frozen mode: the map the Hessian differentiates) */
static PetscErrorCode LossGradient(Net net, Loss loss, Vec theta, Vec X, Vec T, Vec G)
{
  Vec         Y, dY;
  PetscReal   f;
  PetscInt    nx, nin;
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(VecGetLocalSize(X, &nx));
  PetscCall(NetCreateVecs(net, nx / nin, NULL, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(NetSetParameters(net, theta));
  PetscCall(NetForward(net, X, Y));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, NULL, G));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscFunctionReturn(0);
}

/*
  -test_hessian: the curvature of the mean mse loss (LossCreateNetHessian()) of the grid-mode Net over (X, T) against
  the batch-mode reference over (Xr, Tr), along v (vall: the same direction gathered on every rank) and w
*/
static PetscErrorCode CheckHessian(MPI_Comm comm, Net net, Net ref, Vec X, Vec T, Vec Xr, Vec Tr, Vec v, Vec vall, Vec w, PetscInt nf, PetscReal tolh, PetscReal tols)
{
  Loss      loss, lossr;
  Vec       theta0, thsave;
  PetscBool bn = PETSC_FALSE;
  PetscInt  L;

  PetscFunctionBegin;
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSMSE));
  PetscCall(LossCreate(PETSC_COMM_SELF, &lossr));
  PetscCall(LossSetType(lossr, LOSSMSE));
  PetscCall(NetGetParameters(net, &theta0));
  PetscCall(VecDuplicate(theta0, &thsave));
  PetscCall(VecCopy(theta0, thsave));
  PetscCall(NetGetNumLayers(net, &L));
  for (PetscInt l = 0; l < L; l++) { /* batchnorm in training mode is one function of the whole batch: no chunks */
    Layer     layer;
    PetscBool is;

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERBATCHNORM, &is));
    bn = (PetscBool)(bn || is);
  }
  for (PetscInt type = LOSS_HESSIAN_GN; type <= LOSS_HESSIAN_EXACT; type++) {
    Mat         H, Hr;
    Vec         Hv, Hw, Hrv, Hall;
    PetscScalar a, b, c;
    PetscReal   e, r, nHv, nw, nv;
    char        what[64];

    PetscCall(LossCreateNetHessian(loss, net, (LossHessianType)type, &H));
    PetscCall(LossNetHessianSetBatch(H, X, T));
    PetscCall(LossCreateNetHessian(lossr, ref, (LossHessianType)type, &Hr));
    PetscCall(LossNetHessianSetBatch(Hr, Xr, Tr));
    PetscCall(VecDuplicate(v, &Hv));
    PetscCall(VecDuplicate(v, &Hw));
    PetscCall(VecDuplicate(vall, &Hrv));
    PetscCall(MatMult(H, v, Hv));
    PetscCall(MatMult(H, w, Hw));
    PetscCall(MatMult(Hr, vall, Hrv));
    /* against batch mode */
    PetscCall(GatherAll(Hv, &Hall));
    PetscCall(VecAXPY(Hall, -1.0, Hrv));
    PetscCall(VecNorm(Hall, NORM_INFINITY, &e));
    PetscCall(VecNorm(Hrv, NORM_INFINITY, &r));
    PetscCheck(r > 0, comm, PETSC_ERR_PLIB, "%s Hessian: Hv = 0 in batch mode, nothing to compare", LossHessianTypes[type]);
    PetscCall(PetscSNPrintf(what, sizeof(what), "Hessian %s: product", LossHessianTypes[type]));
    PetscCall(Check(comm, what, e / r, tolh));
    /* symmetry, and the Gauss-Newton operator's semi-definiteness */
    PetscCall(VecDot(Hv, w, &a));
    PetscCall(VecDot(v, Hw, &b));
    PetscCall(VecDot(Hv, v, &c));
    PetscCall(VecNorm(Hv, NORM_2, &nHv));
    PetscCall(VecNorm(w, NORM_2, &nw));
    PetscCall(VecNorm(v, NORM_2, &nv));
    PetscCall(PetscSNPrintf(what, sizeof(what), "Hessian %s: symmetry", LossHessianTypes[type]));
    PetscCall(Check(comm, what, PetscAbsScalar(a - b) / (nHv * nw), tols));
    if (type == LOSS_HESSIAN_GN) {
      PetscCall(PetscPrintf(comm, "%-28s %s\n", "Hessian gn: semi-definite", PetscRealPart(c) >= -tols * nHv * nv ? "agrees" : "DIFFERS"));
      PetscCheck(PetscRealPart(c) >= -tols * nHv * nv, comm, PETSC_ERR_PLIB, "Gauss-Newton operator not positive semi-definite in grid mode: <Gv,v> = %g", (double)PetscRealPart(c));
    }
    /* in chunks of one field: every chunk's forward pass again, weighted by its share of the targets */
    if (nf >= 2 && !bn) {
      Mat Hc;
      Vec Hcv;

      PetscCall(LossCreateNetHessian(loss, net, (LossHessianType)type, &Hc));
      PetscCall(LossNetHessianSetBatch(Hc, X, T));
      PetscCall(LossNetHessianSetChunkSize(Hc, 1));
      PetscCall(VecDuplicate(v, &Hcv));
      PetscCall(MatMult(Hc, v, Hcv));
      PetscCall(VecAXPY(Hcv, -1.0, Hv));
      PetscCall(VecNorm(Hcv, NORM_2, &e));
      PetscCall(PetscSNPrintf(what, sizeof(what), "Hessian %s: chunks", LossHessianTypes[type]));
      PetscCall(Check(comm, what, e / nHv, tols));
      PetscCall(VecDestroy(&Hcv));
      PetscCall(MatDestroy(&Hc));
    }
    /* the exact product against central differences of the gradient along v (double: a rounded gradient has none) */
    if (type == LOSS_HESSIAN_EXACT && tols <= 1e-12) {
      Vec       th, gp, gm;
      PetscReal h = 1e-5, nfd;

      PetscCall(VecDuplicate(v, &th));
      PetscCall(VecDuplicate(v, &gp));
      PetscCall(VecDuplicate(v, &gm));
      PetscCall(VecWAXPY(th, h, v, thsave));
      PetscCall(LossGradient(net, loss, th, X, T, gp));
      PetscCall(VecWAXPY(th, -h, v, thsave));
      PetscCall(LossGradient(net, loss, th, X, T, gm));
      PetscCall(NetSetParameters(net, thsave));
      PetscCall(VecAXPY(gp, -1.0, gm));
      PetscCall(VecScale(gp, 1.0 / (2 * h)));
      PetscCall(VecNorm(gp, NORM_2, &nfd));
      PetscCall(VecAXPY(gp, -1.0, Hv));
      PetscCall(VecNorm(gp, NORM_2, &e));
      PetscCall(PetscPrintf(comm, "%-28s %s\n", "Hessian exact: differences", e <= 1e-6 * nfd ? "agrees" : "DIFFERS"));
      PetscCheck(e <= 1e-6 * nfd, comm, PETSC_ERR_PLIB, "Exact Hessian-vector product in grid mode against central differences of the gradient: relative error %g > 1e-6", (double)(e / nfd));
      PetscCall(VecDestroy(&th));
      PetscCall(VecDestroy(&gp));
      PetscCall(VecDestroy(&gm));
    }
    PetscCall(VecDestroy(&Hall));
    PetscCall(VecDestroy(&Hv));
    PetscCall(VecDestroy(&Hw));
    PetscCall(VecDestroy(&Hrv));
    PetscCall(MatDestroy(&H));
    PetscCall(MatDestroy(&Hr));
  }
  PetscCall(VecDestroy(&thsave));
  PetscCall(LossDestroy(&loss));
  PetscCall(LossDestroy(&lossr));
  PetscFunctionReturn(0);
}

/*
  -test_memory: the workspace of one training step at the Net's precision, to the byte. The high-water mark is taken by
  wrapping PETSc's tracing allocator for the step (PetscMallocPushMaximumUsage() of PETSc 3.18 does not follow it); the
  value store's own arrays (each value, its cotangent, fan-out sums: netprecision.c) and the output Vec are what any
  step keeps, so they are subtracted: what is left is what the nodes widen, gather and compute in (float copies of
  stored bfloat16 values, boxes with their halos, slabs, the layers' workspaces). Deterministic: the same allocations
  in the same order on every run.
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

static PetscErrorCode TestStepMemory(Net net, Vec X, PetscInt n, PetscReal bound)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)net);
  Vec            Y, dY, G;
  PetscLogDouble before;
  PetscReal      r[3]; /* the workspace's bytes, the largest value's float bytes, their ratio */
  PetscInt       es, largest = 0, insize;
  PetscBool      tracing;

  PetscFunctionBegin;
  PetscCall(PetscMallocGetDebug(&tracing, NULL, NULL));
  PetscCheck(tracing, comm, PETSC_ERR_ARG_WRONGSTATE, "-test_memory counts the bytes of PETSc's tracing allocator: add -malloc_debug");
  PetscCall(NetCreateVecs(net, n, NULL, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecSet(dY, 1.0));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(VecZeroEntries(G));
  PetscCall(PetscMallocGetCurrentUsage(&before));
  StepPeak         = before;
  StepSavedMalloc  = PetscTrMalloc;
  StepSavedRealloc = PetscTrRealloc;
  PetscTrMalloc    = StepMalloc;
  PetscTrRealloc   = StepRealloc;
  PetscCall(NetForward(net, X, Y));
  PetscCall(NetBackward(net, dY, NULL, G));
  PetscTrMalloc  = StepSavedMalloc;
  PetscTrRealloc = StepSavedRealloc;
  /* the store: per value v its value (unless an activation shares its producer's), its cotangent and fan-out sum, of
     es bytes an entry, and the output Vec (double) */
  es = net->precision == NET_PRECISION_DOUBLE ? (PetscInt)sizeof(PetscScalar) : net->precision == NET_PRECISION_SINGLE ? (PetscInt)sizeof(float) : (PetscInt)sizeof(uint16_t);
  PetscCall(PetNetShapeSize(&net->in, &insize));
  r[0] = (PetscReal)(StepPeak - before);
  for (PetscInt v = 0; v <= net->nlayers; v++) {
    const PetscInt count = net->vlocal[v] * (v ? net->layers[v - 1]->outsize : insize);

    r[0] -= (PetscReal)es * count * (v ? NetNodeStoredArrays(net, v - 1) : 1 + (net->ninputuses > 1 ? 1 : 0) + 1);
    if (v && count > net->vlocal[largest] * (largest ? net->layers[largest - 1]->outsize : insize)) largest = v;
  }
  if (net->precision != NET_PRECISION_DOUBLE) r[0] -= (PetscReal)sizeof(PetscScalar) * net->vlocal[net->nlayers] * net->layers[net->nlayers - 1]->outsize;
  r[1] = (PetscReal)sizeof(float) * net->vlocal[largest] * (largest ? net->layers[largest - 1]->outsize : insize);
  r[2] = r[0] / PetscMax(r[1], 1);
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, r, 3, MPIU_REAL, MPIU_MAX, comm));
  PetscCall(PetscPrintf(comm, "a training step's workspace beyond the stored values: %.0f bytes on the busiest rank, %.3f of the largest value in float (%.0f bytes); at most %g\n", (double)r[0], (double)r[2], (double)r[1], (double)bound));
  PetscCheck(r[2] <= bound, comm, PETSC_ERR_PLIB, "A training step used %.3f of the largest value in float beyond the stored values (> %g): some node widens a whole array of the batch", (double)r[2], (double)bound);
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&G));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm       comm, gcomm;
  Net            net, ref;
  PetscReal      tol1 = 1e-13, tol2 = 1e-12;   /* first- and second-order bounds: double, or 10 L u and 20 L u */
  PetscReal      dottol = 1e-12, fdtol = 1e-6; /* NetTestJacobian's bounds (its manual page): double, or low precision's */
  DM             da;
  PetscInt       nsd = 2, C = 2, nf = 1, ngroups = 1, gdim[3] = {8, 8, 8}, n = 3, gm[3], *own[3] = {NULL, NULL, NULL};
  PetscInt64     N[3], lo[3], sz[3];
  PetscBool      uneven = PETSC_FALSE, testjac = PETSC_FALSE, view = PETSC_FALSE, periodic = PETSC_FALSE, testso = PETSC_FALSE, testhess = PETSC_FALSE, ongrid, keepsfew;
  DMBoundaryType bt;
  PetscMPIInt    size, rank, gsize, grank;
  Vec            X, Y, dY, dX, G, Xr, Yr, dYr, dXr, Gr, theta, thall, dth = NULL, dthall = NULL, Yd = NULL, Ydr = NULL;
  PetNetShape    in, out;
  PetNetLayout   Lout = NULL;
  PetscInt64     ON[3], olo[3], osz[3]; /* the output grid and this rank's block of it */
  PetscInt       g, Co, onf;
  PetscReal      rel;
  char           text[64], saveload[PETSC_MAX_PATH_LEN] = "";
  PetscReal      membound = -1, parratio = 0;

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetInitializePackage());
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-grid", gdim, &n, NULL));
  nsd = n;
  PetscCheck(nsd == 2 || nsd == 3, comm, PETSC_ERR_ARG_WRONG, "-grid HxW or DxHxW");
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-channels", &C, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nfields", &nf, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-uneven", &uneven, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_jacobian", &testjac, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-view", &view, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-periodic", &periodic, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_secondorder", &testso, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-test_hessian", &testhess, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-save_load", saveload, sizeof(saveload), NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-test_memory", &membound, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-param_ratio", &parratio, NULL));
  bt = periodic ? DM_BOUNDARY_PERIODIC : DM_BOUNDARY_NONE;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-net_spatial_groups", &ngroups, NULL));
  for (PetscInt d = 0; d < nsd; d++) N[d] = gdim[d];

  /* the Net under test, on the grid */
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetGetSpatialComm(net, &gcomm));
  PetscCallMPI(MPI_Comm_size(gcomm, &gsize));
  PetscCallMPI(MPI_Comm_rank(gcomm, &grank));
  if (nsd == 2) {
    PetscCall(DMDACreate2d(gcomm, bt, bt, DMDA_STENCIL_BOX, gdim[1], gdim[0], PETSC_DECIDE, PETSC_DECIDE, C, 0, NULL, NULL, &da));
  } else {
    PetscCall(DMDACreate3d(gcomm, bt, bt, bt, DMDA_STENCIL_BOX, gdim[2], gdim[1], gdim[0], PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, C, 0, NULL, NULL, NULL, &da));
  }
  if (uneven) { /* the process grid DMDA would choose, with uneven ranges */
    DM tmp = da;

    PetscCall(DMSetUp(tmp));
    PetscCall(DMDAGetInfo(tmp, NULL, NULL, NULL, NULL, &gm[0], &gm[1], &gm[2], NULL, NULL, NULL, NULL, NULL, NULL));
    for (PetscInt a = 0; a < nsd; a++) PetscCall(Uneven(gdim[nsd - 1 - a], gm[a], &own[a]));
    if (nsd == 2)
      PetscCall(DMDACreate2d(gcomm, bt, bt, DMDA_STENCIL_BOX, gdim[1], gdim[0], gm[0], gm[1], C, 0, own[0], own[1], &da));
    else
      PetscCall(DMDACreate3d(gcomm, bt, bt, bt, DMDA_STENCIL_BOX, gdim[2], gdim[1], gdim[0], gm[0], gm[1], gm[2], C, 0, own[0], own[1], own[2], &da));
    PetscCall(DMDestroy(&tmp));
    for (PetscInt a = 0; a < nsd; a++) PetscCall(PetscFree(own[a]));
  }
  PetscCall(DMSetUp(da));
  PetscCall(NetSetGrid(net, da));
  PetscCall(NetSetUp(net));
  if (view) PetscCall(NetView(net, NULL));
  PetscCall(NetGetOutputShape(net, &out));

  /* the reference: batch mode, all fields on every rank */
  in.ndim = nsd + 1;
  for (PetscInt d = 0; d < nsd; d++) in.dim[d] = gdim[d];
  in.dim[nsd] = C;
  PetscCall(NetCreate(PETSC_COMM_SELF, &ref));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)ref, "ref_"));
  if (saveload[0]) { /* the grid-mode Net from its file, on whole fields: -ref_net_input_shape gives their shape */
    PetscCall(NetSave(net, saveload));
    PetscCall(PetNetShapeToString(&in, sizeof(text), text));
    PetscCall(PetscOptionsSetValue(NULL, "-ref_net_input_shape", text));
    PetscCall(NetLoad(ref, saveload));
    PetscCall(PetscOptionsClearValue(NULL, "-ref_net_input_shape"));
    PetscCall(PetscPrintf(comm, "grid-mode Net saved to %s and loaded on whole fields of shape %s\n", saveload, text));
  } else {
    char      layers[4096];
    PetscBool graph;

    PetscCall(PetscOptionsGetString(NULL, NULL, "-net_graph", layers, sizeof(layers), &graph));
    if (graph)
      PetscCall(NetSetGraph(ref, layers));
    else {
      PetscCall(PetscOptionsGetString(NULL, NULL, "-net_layers", layers, sizeof(layers), NULL));
      PetscCall(NetSetLayers(ref, layers));
    }
  }
  if (!saveload[0]) PetscCall(NetSetInputShape(ref, &in));
  PetscCall(NetSetUp(ref));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(GatherAll(theta, &thall));
  if (!saveload[0]) PetscCall(NetSetParameters(ref, thall)); /* loaded: the file's */
  {
    NetPrecision prec;
    PetscInt     L;

    PetscCall(NetGetPrecision(net, &prec));
    PetscCall(NetGetNumLayers(net, &L));
    if (prec != NET_PRECISION_DOUBLE) {
      const PetscReal u = prec == NET_PRECISION_SINGLE ? PetscPowReal(2.0, -24) : PetscPowReal(2.0, -8);

      tol1   = 10 * L * u;
      tol2   = 20 * L * u;
      dottol = tol1;                                                                 /* the halo exchanges' float identity is folded in */
      fdtol  = prec == NET_PRECISION_SINGLE ? 100 * PetscPowReal(u, 2.0 / 3) : tol1; /* bfloat16: against double */
    }
  }

  /* inputs: this rank's block of its group's nf fields; the reference holds all G nf fields */
  {
    PetscInt xs, ys, zs, xm, ym, zm;

    PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
    if (nsd == 2) {
      lo[0] = ys, lo[1] = xs, sz[0] = ym, sz[1] = xm;
    } else {
      lo[0] = zs, lo[1] = ys, lo[2] = xs, sz[0] = zm, sz[1] = ym, sz[2] = xm;
    }
  }
  {
    PetscInt     np = 1, Np = 1;
    PetscScalar *a;
    PetscInt64   zero[3] = {0, 0, 0};
    PetscInt     g       = rank / gsize;

    for (PetscInt d = 0; d < nsd; d++) {
      np *= sz[d];
      Np *= gdim[d];
    }
    PetscCall(VecCreateMPI(comm, nf * np * C, PETSC_DETERMINE, &X));
    PetscCall(VecGetArrayWrite(X, &a));
    PetscCall(FillBlock(nsd, N, lo, sz, g, nf, C, 0, a));
    PetscCall(VecRestoreArrayWrite(X, &a));
    PetscCall(VecCreateSeq(PETSC_COMM_SELF, ngroups * nf * Np * C, &Xr));
    PetscCall(VecGetArrayWrite(Xr, &a));
    PetscCall(FillBlock(nsd, N, zero, N, 0, ngroups * nf, C, 0, a));
    PetscCall(VecRestoreArrayWrite(Xr, &a));
  }
  {
    PetscInt np = 1;

    for (PetscInt d = 0; d < nsd; d++) np *= sz[d];
    if (membound >= 0) PetscCall(TestStepMemory(net, X, nf * np, membound)); /* the first step: the store is made in it */
    PetscCall(NetCreateVecs(net, nf * np, NULL, &Y));
    PetscCall(NetCreateVecs(ref, ngroups * nf, NULL, &Yr));
    PetscCall(NetForward(net, X, Y));
    PetscCall(NetForward(ref, Xr, Yr));
  }
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(Yr, &dYr));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(VecDuplicate(Xr, &dXr));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(NetCreateParameterVec(ref, &Gr));
  PetscCall(VecZeroEntries(G));
  PetscCall(VecZeroEntries(Gr));

  /* the output, and a cotangent given at the same global positions to both */
  {
    PetscErrorCode ierr;

    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = NetCreateOutputLayout(net, nf, &Lout);
    PetscCall(PetscPopErrorHandler());
    ongrid = (PetscBool)!ierr;
  }
  /* where this rank's output entries lie: its block of the output grid, or (off the grid) the group's nf samples on
     its first rank, as a 1 x 1 x 1 grid */
  g  = rank / gsize;
  Co = out.dim[out.ndim - 1];
  if (ongrid) {
    PetNetShape rout;
    PetscInt64  blo[PETNET_LAYOUT_MAX_DIM], bsz[PETNET_LAYOUT_MAX_DIM];

    PetscCall(PetNetLayoutGetBlock(Lout, blo, bsz));
    PetscCall(NetGetOutputShape(ref, &rout));
    for (PetscInt d = 0; d < nsd; d++) {
      ON[d]  = rout.dim[d];
      olo[d] = blo[d + 1];
      osz[d] = bsz[d + 1];
    }
    onf = nf;
  } else {
    for (PetscInt d = 0; d < nsd; d++) {
      ON[d]  = 1;
      olo[d] = 0;
      osz[d] = grank ? 0 : 1;
    }
    onf = grank ? 0 : nf;
  }
  {
    const PetscScalar *y;
    PetscScalar       *a;
    PetscInt64         zero[3] = {0, 0, 0};

    PetscCall(VecGetArrayRead(Y, &y));
    PetscCall(CompareBlock(comm, nsd, ON, olo, osz, g, onf, Co, y, Yr, &rel));
    PetscCall(VecRestoreArrayRead(Y, &y));
    PetscCall(Check(comm, "forward", rel, tol1));
    PetscCall(VecGetArrayWrite(dY, &a)); /* a cotangent given at the same global positions to both */
    PetscCall(FillBlock(nsd, ON, olo, osz, g, onf, Co, 1, a));
    PetscCall(VecRestoreArrayWrite(dY, &a));
    PetscCall(VecGetArrayWrite(dYr, &a));
    PetscCall(FillBlock(nsd, ON, zero, ON, 0, ngroups * nf, Co, 1, a));
    PetscCall(VecRestoreArrayWrite(dYr, &a));
  }

  /* a pipeline whose stages keep only some micro-batches' values (1F1B, more micro-batches than stages) */
  {
    NetPipelineSchedule sched;
    PetscInt            S, M;

    PetscCall(NetGetPipelineSchedule(net, &sched));
    PetscCall(NetGetStages(net, &S));
    PetscCall(NetGetMicroBatches(net, &M));
    keepsfew = (PetscBool)(sched == NET_PIPELINE_1F1B && M > S);
  }
  /* backward: the input cotangent and the parameter gradient (with 1F1B and more micro-batches than stages, whose stages
     keep only some micro-batches' values, by NetForwardBackward(), handing it dY's rows) */
  {
    if (keepsfew) {
      CotangentRows rows;

      rows.nout = Co;
      PetscCall(VecGetArrayRead(dY, &rows.a));
      PetscCall(NetForwardBackward(net, X, GiveCotangent, &rows, NULL, dX, G));
      PetscCall(VecRestoreArrayRead(dY, &rows.a));
    } else
      PetscCall(NetBackward(net, dY, dX, G));
  }
  PetscCall(NetBackward(ref, dYr, dXr, Gr));
  {
    const PetscScalar *a;
    Vec                Gall;

    PetscCall(VecGetArrayRead(dX, &a));
    PetscCall(CompareBlock(comm, nsd, N, lo, sz, rank / gsize, nf, C, a, dXr, &rel));
    PetscCall(VecRestoreArrayRead(dX, &a));
    PetscCall(Check(comm, "backward: input cotangent", rel, tol1));
    PetscCall(GatherAll(G, &Gall));
    PetscCall(VecAXPY(Gall, -1.0, Gr));
    {
      PetscReal e, r;

      PetscCall(VecNorm(Gall, NORM_INFINITY, &e));
      PetscCall(VecNorm(Gr, NORM_INFINITY, &r));
      rel = e / PetscMax(r, 1e-300);
    }
    PetscCall(Check(comm, "backward: parameter gradient", rel, tol1));
    PetscCall(VecDestroy(&Gall));
  }

  /* jvp along (dX, a parameter direction); not with 1F1B and more micro-batches than stages, whose stages keep only
     some micro-batches' values (NetJVP() refuses it) */
  {
    if (keepsfew) {
      PetscCall(PetscPrintf(comm, "%-28s %s\n", "jvp", "not run (1F1B)"));
      testso   = PETSC_FALSE;
      testhess = PETSC_FALSE;
      goto nojvp;
    }
  }
  PetscCall(VecDuplicate(theta, &dth));
  {
    PetscScalar *a;
    PetscInt     lo0, hi0;

    PetscCall(VecGetOwnershipRange(dth, &lo0, &hi0));
    PetscCall(VecGetArrayWrite(dth, &a));
    for (PetscInt i = lo0; i < hi0; i++) a[i - lo0] = Table(0, i, 0, 2);
    PetscCall(VecRestoreArrayWrite(dth, &a));
  }
  PetscCall(GatherAll(dth, &dthall));
  PetscCall(VecDuplicate(Y, &Yd));
  PetscCall(VecDuplicate(Yr, &Ydr));
  PetscCall(NetJVP(net, dX, dth, Yd));
  PetscCall(NetJVP(ref, dXr, dthall, Ydr));
  {
    const PetscScalar *a;

    PetscCall(VecGetArrayRead(Yd, &a));
    PetscCall(CompareBlock(comm, nsd, ON, olo, osz, g, onf, Co, a, Ydr, &rel));
    PetscCall(VecRestoreArrayRead(Yd, &a));
    PetscCall(Check(comm, "jvp", rel, tol1));
  }
  if (testso) { /* the exact Hessian-vector product along the last JVP's tangents, with dY fixed and dYdot = dY */
    Vec                H, Hr, Hall, dXd, dXdr;
    const PetscScalar *a;
    PetscReal          e, r;

    PetscCall(NetCreateParameterVec(net, &H));
    PetscCall(NetCreateParameterVec(ref, &Hr));
    PetscCall(VecZeroEntries(H));
    PetscCall(VecZeroEntries(Hr));
    PetscCall(VecDuplicate(X, &dXd));
    PetscCall(VecDuplicate(Xr, &dXdr));
    PetscCall(NetSecondOrderBackward(net, dY, dY, dXd, H));
    PetscCall(NetSecondOrderBackward(ref, dYr, dYr, dXdr, Hr));
    PetscCall(GatherAll(H, &Hall));
    PetscCall(VecAXPY(Hall, -1.0, Hr));
    PetscCall(VecNorm(Hall, NORM_INFINITY, &e));
    PetscCall(VecNorm(Hr, NORM_INFINITY, &r));
    PetscCall(Check(comm, "Hessian-vector product", e / PetscMax(r, 1e-300), tol2));
    PetscCall(VecGetArrayRead(dXd, &a));
    PetscCall(CompareBlock(comm, nsd, N, lo, sz, rank / gsize, nf, C, a, dXdr, &rel));
    PetscCall(VecRestoreArrayRead(dXd, &a));
    PetscCall(Check(comm, "second order: input", rel, tol2));
    PetscCall(VecDestroy(&Hall));
    PetscCall(VecDestroy(&H));
    PetscCall(VecDestroy(&Hr));
    PetscCall(VecDestroy(&dXd));
    PetscCall(VecDestroy(&dXdr));
  }
  if (testhess) { /* targets at the output's global positions, a second direction w; the bounds of the help text */
    Vec          T, Tr, w;
    PetscScalar *a;
    PetscInt64   zero[3] = {0, 0, 0};
    PetscInt     lo0, hi0;

    PetscCall(VecDuplicate(Y, &T));
    PetscCall(VecDuplicate(Yr, &Tr));
    PetscCall(VecGetArrayWrite(T, &a));
    PetscCall(FillBlock(nsd, ON, olo, osz, g, onf, Co, 3, a));
    PetscCall(VecRestoreArrayWrite(T, &a));
    PetscCall(VecGetArrayWrite(Tr, &a));
    PetscCall(FillBlock(nsd, ON, zero, ON, 0, ngroups * nf, Co, 3, a));
    PetscCall(VecRestoreArrayWrite(Tr, &a));
    PetscCall(VecDuplicate(dth, &w));
    PetscCall(VecGetOwnershipRange(w, &lo0, &hi0));
    PetscCall(VecGetArrayWrite(w, &a));
    for (PetscInt i = lo0; i < hi0; i++) a[i - lo0] = Table(1, i, 0, 4);
    PetscCall(VecRestoreArrayWrite(w, &a));
    PetscCall(CheckHessian(comm, net, ref, X, T, Xr, Tr, dth, dthall, w, nf, tol1 <= 1e-13 ? 1e-10 : tol2, tol1 <= 1e-13 ? 1e-12 : tol2 / 2));
    PetscCall(VecDestroy(&T));
    PetscCall(VecDestroy(&Tr));
    PetscCall(VecDestroy(&w));
  }
nojvp:
  if (testjac) {
    PetscReal doterr, fderr;

    PetscCall(NetTestJacobian(net, X, NULL, &doterr, &fderr));
    PetscCall(PetscPrintf(comm, "dot-product tests           %s\nfinite differences          %s\n", doterr <= dottol ? "pass" : "FAIL", fderr <= fdtol ? "pass" : "FAIL"));
    PetscCheck(doterr <= dottol && fderr <= fdtol, comm, PETSC_ERR_PLIB, "NetTestJacobian: dot-product error %g (bound %g), finite-difference error %g (bound %g)", (double)doterr, (double)dottol, (double)fderr, (double)fdtol);
  }
  if (parratio > 0) { /* what a rank keeps of the parameters (its slice of theta, the copy theta_rep, its gradient grad_rep and
                         the JVP's direction dtheta_rep), against the parameters of the nodes it runs */
    PetscReal lo = 0, hi = 0;

    PetscCall(TestParametersHeld(net, &lo, &hi));
    PetscCall(PetscPrintf(comm, "parameter entries held per rank %.3f to %.3f of its stage's\n", (double)lo, (double)hi));
    PetscCheck(hi <= parratio, comm, PETSC_ERR_PLIB, "a rank holds %.3f of its stage's parameters, more than -param_ratio %g", (double)hi, (double)parratio);
  }
  PetscCall(PetNetShapeToString(&out, sizeof(text), text));
  PetscCall(PetscPrintf(comm, "grid mode on %" PetscInt_FMT " group(s) of %d rank(s): output %s per %s\n", ngroups, gsize, text, ongrid ? "grid point" : "field"));

  PetscCall(PetNetLayoutDestroy(&Lout));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Yr));
  PetscCall(VecDestroy(&Yd));
  PetscCall(VecDestroy(&Ydr));
  PetscCall(VecDestroy(&dth));
  PetscCall(VecDestroy(&dthall));
  PetscCall(VecDestroy(&thall));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Xr));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dYr));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&dXr));
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&Gr));
  PetscCall(NetDestroy(&ref));
  PetscCall(NetDestroy(&net));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
