static const char help[] = "Sequence parallelism (-net_parallel sequence) against the one-rank double reference. In one program the\n"
                           "same Net (same seed) is built twice: on PETSC_COMM_SELF with the whole batch (replicated, double), and on\n"
                           "PETSC_COMM_WORLD with the tokens split over groups of ranks (NetSetFromOptions(): -net_precision,\n"
                           "-net_sequence_ranks, -net_view, -net_test_jacobian apply to it; the nodes' options such as -layer1_attention_dropout\n"
                           "to both). Per-token crossentropy (T labels per\n"
                           "sample, classes = the output's last dim). Asserted: the loss, the outputs, the parameter gradient and\n"
                           "the JVP along a parameter direction (and the input gradient and input JVP when the input is not token\n"
                           "ids) agree with the reference to -tol relative; with -memory_ratio r, the bytes of the values a rank stores\n"
                           "(the value store) are at most r times the reference's, with -memory_total_ratio r all bytes a forward\n"
                           "and backward pass allocates (the layers' state included).\n"
                           "Options: -layers LIST -input_shape T|TxC [-vocab V: token ids in [0, V)] [-nsamples N] [-last: every\n"
                           "sample on the last rank] [-tol 1e-12] [-memory_ratio r] [-memory_total_ratio r] [-jacobian].\n";

#include <petnet.h>
#include <petnet/private/netimpl.h> /* the value store's Vecs, for the memory they hold */
#include "testutil.h"

typedef struct {
  Net       net;
  Loss      loss;
  Vec       X, Y, T, dY, G, dX, dth, JY, JYx, dXdir;
  PetscReal f;
  size_t    bytes;  /* allocated by the forward and backward pass (the workspace and what the layers keep) */
  size_t    stored; /* ... of which the Net's value store: the values, (co)tangents and fan-out sums of the batch */
} Side;

typedef struct {
  char        layers[4096];
  PetNetShape shape;
  PetscInt    T, C, V, N;
} Problem;

/* the global tables, the same on every rank: inputs (ids or values), labels, directions */
static PetscErrorCode MakeTables(const Problem *p, PetscInt P, PetscScalar **x, PetscScalar **lab, PetscScalar **pdir, PetscScalar **xdir, PetscInt classes)
{
  PetscRandom rnd;
  PetscInt    nx = p->N * p->T * p->C;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1, 1));
  PetscCall(PetscRandomSetSeed(rnd, 7));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc4(nx, x, p->N * p->T, lab, P + 1, pdir, nx, xdir));
  for (PetscInt i = 0; i < nx; i++) {
    PetscCall(PetscRandomGetValue(rnd, &(*x)[i]));
    if (p->V) (*x)[i] = (PetscScalar)((5 * i + 3) % p->V); /* token ids */
  }
  for (PetscInt i = 0; i < p->N * p->T; i++) (*lab)[i] = (PetscScalar)((3 * i + 1) % classes);
  for (PetscInt i = 0; i < P; i++) PetscCall(PetscRandomGetValue(rnd, &(*pdir)[i]));
  for (PetscInt i = 0; i < nx; i++) PetscCall(PetscRandomGetValue(rnd, &(*xdir)[i]));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* rank's block of a global table of n local rows of m entries each */
static PetscErrorCode FillBlock(Vec v, PetscInt m, const PetscScalar tab[])
{
  PetscInt     lo, hi;
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &lo, &hi));
  PetscCall(VecGetArray(v, &a));
  for (PetscInt i = lo; i < hi; i++) a[i - lo] = tab[i];
  PetscCall(VecRestoreArray(v, &a));
  (void)m;
  PetscFunctionReturn(0);
}

static PetscErrorCode SideCompute(MPI_Comm comm, const Problem *p, PetscInt n, PetscBool world, PetscBool jacobian, Side *s)
{
  PetNetShape    out;
  PetscInt       P, classes;
  PetscScalar   *x, *lab, *pdir, *xdir;
  PetscLogDouble before, after;

  PetscFunctionBegin;
  PetscCall(NetCreate(comm, &s->net));
  PetscCall(NetSetLayers(s->net, p->layers));
  PetscCall(NetSetInputShape(s->net, &p->shape));
  PetscCall(NetSetSeed(s->net, 13));
  if (world) {
    PetscCall(NetSetParallel(s->net, NET_PARALLEL_SEQUENCE));
    PetscCall(NetSetFromOptions(s->net));
  } else
    PetscCall(TestLayersSetFromOptions(s->net)); /* the reference takes the nodes' own options too, not the Net's */
  PetscCall(NetSetUp(s->net));
  PetscCall(NetGetOutputShape(s->net, &out));
  PetscCheck(out.ndim == 2 && out.dim[0] == p->T, comm, PETSC_ERR_ARG_WRONG, "The Net's output must be (T, classes) = (%" PetscInt_FMT ", V)", p->T);
  classes = out.dim[1];
  PetscCall(NetGetNumParameters(s->net, &P));
  PetscCall(MakeTables(p, P, &x, &lab, &pdir, &xdir, classes));
  PetscCall(LossCreate(comm, &s->loss));
  PetscCall(LossSetType(s->loss, LOSSCROSSENTROPY));
  PetscCall(NetCreateVecs(s->net, n, &s->X, &s->Y));
  PetscCall(VecCreateMPI(comm, n * p->T, PETSC_DETERMINE, &s->T));
  PetscCall(VecDuplicate(s->Y, &s->dY));
  PetscCall(VecDuplicate(s->Y, &s->JY));
  PetscCall(VecDuplicate(s->Y, &s->JYx));
  PetscCall(VecDuplicate(s->X, &s->dX));
  PetscCall(VecDuplicate(s->X, &s->dXdir));
  PetscCall(NetCreateParameterVec(s->net, &s->G));
  PetscCall(VecDuplicate(s->G, &s->dth));
  PetscCall(FillBlock(s->X, 1, x));
  PetscCall(FillBlock(s->T, 1, lab));
  PetscCall(FillBlock(s->dth, 1, pdir));
  PetscCall(FillBlock(s->dXdir, 1, xdir));
  PetscCall(PetscFree4(x, lab, pdir, xdir));

  PetscCall(PetscMallocGetCurrentUsage(&before));
  PetscCall(NetForward(s->net, s->X, s->Y));
  PetscCall(LossEvaluate(s->loss, s->Y, s->T, &s->f, s->dY));
  PetscCall(VecZeroEntries(s->G));
  PetscCall(NetBackward(s->net, s->dY, p->V ? NULL : s->dX, s->G));
  PetscCall(PetscMallocGetCurrentUsage(&after));
  s->bytes  = (size_t)(after - before);
  s->stored = 0;
  for (PetscInt v = 0; v <= s->net->nlayers; v++) { /* the double store: Vecs act, dact, dsum */
    Vec      vecs[3] = {s->net->act[v], s->net->dact[v], s->net->dsum[v]};
    PetscInt m;

    for (PetscInt i = 0; i < 3; i++)
      if (vecs[i]) {
        PetscCall(VecGetLocalSize(vecs[i], &m));
        s->stored += (size_t)m * sizeof(PetscScalar);
      }
  }
  PetscCall(NetJVP(s->net, NULL, s->dth, s->JY));
  if (!p->V) PetscCall(NetJVP(s->net, s->dXdir, NULL, s->JYx));
  if (world && jacobian) {
    PetscReal dot, fd;

    PetscCall(NetTestJacobian(s->net, s->X, NULL, &dot, &fd));
    PetscCheck(dot <= 1e-12 && fd <= 1e-6, comm, PETSC_ERR_PLIB, "NetTestJacobian() under -net_parallel sequence: dot-product error %g, finite differences %g", (double)dot, (double)fd);
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode SideDestroy(Side *s)
{
  PetscFunctionBegin;
  PetscCall(VecDestroy(&s->X));
  PetscCall(VecDestroy(&s->Y));
  PetscCall(VecDestroy(&s->T));
  PetscCall(VecDestroy(&s->dY));
  PetscCall(VecDestroy(&s->G));
  PetscCall(VecDestroy(&s->dX));
  PetscCall(VecDestroy(&s->dth));
  PetscCall(VecDestroy(&s->JY));
  PetscCall(VecDestroy(&s->JYx));
  PetscCall(VecDestroy(&s->dXdir));
  PetscCall(LossDestroy(&s->loss));
  PetscCall(NetDestroy(&s->net));
  PetscFunctionReturn(0);
}

/* |gather(vw) - vs| / |vs|, vw on WORLD, vs its whole counterpart on SELF */
static PetscErrorCode RelDiff(Vec vw, Vec vs, PetscReal *err)
{
  VecScatter         toall;
  Vec                all;
  const PetscScalar *a, *b;
  PetscInt           N;
  PetscReal          d = 0, s = 0;

  PetscFunctionBegin;
  PetscCall(VecScatterCreateToAll(vw, &toall, &all));
  PetscCall(VecScatterBegin(toall, vw, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toall, vw, all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetSize(all, &N));
  PetscCall(VecGetArrayRead(all, &a));
  PetscCall(VecGetArrayRead(vs, &b));
  for (PetscInt i = 0; i < N; i++) {
    d += PetscSqr(PetscRealPart(a[i] - b[i]));
    s += PetscSqr(PetscRealPart(b[i]));
  }
  PetscCall(VecRestoreArrayRead(vs, &b));
  PetscCall(VecRestoreArrayRead(all, &a));
  *err = s > 0 ? PetscSqrtReal(d / s) : PetscSqrtReal(d);
  PetscCall(VecScatterDestroy(&toall));
  PetscCall(VecDestroy(&all));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Problem     p          = {.N = 3};
  char        shape[256] = "";
  PetscBool   last = PETSC_FALSE, jacobian = PETSC_FALSE, flg;
  PetscReal   tol = 1e-12, ratio = 0, totalratio = 0, eY, ef, eG, eJ, edX = 0, eJx = 0;
  PetscInt    n = PETSC_DECIDE;
  PetscMPIInt rank, size;
  Side        s = {0}, w = {0};

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Sequence parallelism", NULL);
  PetscCall(PetscOptionsString("-layers", "The layer list", NULL, p.layers, p.layers, sizeof(p.layers), &flg));
  PetscCheck(flg, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "give -layers");
  PetscCall(PetscOptionsString("-input_shape", "T (token ids) or TxC", NULL, shape, shape, sizeof(shape), &flg));
  PetscCheck(flg, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "give -input_shape");
  PetscCall(PetscOptionsInt("-vocab", "Token ids in [0, V) (0: random inputs in [-1, 1))", NULL, p.V, &p.V, NULL));
  PetscCall(PetscOptionsInt("-nsamples", "Samples of the global batch", NULL, p.N, &p.N, NULL));
  PetscCall(PetscOptionsBool("-last", "Every sample on the last rank", NULL, last, &last, NULL));
  PetscCall(PetscOptionsReal("-tol", "Relative tolerance against the reference", NULL, tol, &tol, NULL));
  PetscCall(PetscOptionsReal("-memory_ratio", "Assert the stored values' bytes <= this times the reference's (0: no check)", NULL, ratio, &ratio, NULL));
  PetscCall(PetscOptionsReal("-memory_total_ratio", "Assert all bytes a pass allocates <= this times the reference's (0: no check)", NULL, totalratio, &totalratio, NULL));
  PetscCall(PetscOptionsBool("-jacobian", "NetTestJacobian() on the sequence-parallel Net must pass", NULL, jacobian, &jacobian, NULL));
  PetscOptionsEnd();
  PetscCall(PetNetShapeFromString(shape, &p.shape));
  p.T = p.shape.dim[0];
  p.C = p.shape.ndim > 1 ? p.shape.dim[1] : 1;
  if (last)
    n = rank == size - 1 ? p.N : 0;
  else
    PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &p.N));

  PetscCall(SideCompute(PETSC_COMM_WORLD, &p, n, PETSC_TRUE, jacobian, &w)); /* first: a refusal is the sequence-parallel Net's */
  PetscCall(SideCompute(PETSC_COMM_SELF, &p, p.N, PETSC_FALSE, PETSC_FALSE, &s));
  PetscCall(RelDiff(w.Y, s.Y, &eY));
  ef = PetscAbsReal(w.f - s.f) / PetscAbsReal(s.f);
  PetscCall(RelDiff(w.G, s.G, &eG));
  PetscCall(RelDiff(w.JY, s.JY, &eJ));
  if (!p.V) {
    PetscCall(RelDiff(w.dX, s.dX, &edX));
    PetscCall(RelDiff(w.JYx, s.JYx, &eJx));
  }
  PetscCall(PetscInfo(NULL, "relative differences: Y %g f %g G %g JVP %g dX %g JVPx %g\n", (double)eY, (double)ef, (double)eG, (double)eJ, (double)edX, (double)eJx));
  PetscCheck(ef <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "loss %.17g under -net_parallel sequence, %.17g on one rank: relative %g > %g", (double)w.f, (double)s.f, (double)ef, (double)tol);
  PetscCheck(eY <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "outputs differ from one rank's by %g relative (> %g)", (double)eY, (double)tol);
  PetscCheck(eG <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "parameter gradients differ from one rank's by %g relative (> %g)", (double)eG, (double)tol);
  PetscCheck(eJ <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "JVPs along the parameters differ from one rank's by %g relative (> %g)", (double)eJ, (double)tol);
  PetscCheck(edX <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "input gradients differ from one rank's by %g relative (> %g)", (double)edX, (double)tol);
  PetscCheck(eJx <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "JVPs along the input differ from one rank's by %g relative (> %g)", (double)eJx, (double)tol);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " samples of %" PetscInt_FMT " tokens on %d ranks: loss %.10f; loss, outputs, gradients and JVPs agree with one rank to %.2g\n", p.N, p.T, size, (double)w.f, (double)tol));
  if (ratio > 0 || totalratio > 0) {
    unsigned long mine[2] = {(unsigned long)w.stored, (unsigned long)w.bytes}, most[2];

    PetscCallMPI(MPI_Allreduce(mine, most, 2, MPI_UNSIGNED_LONG, MPI_MAX, PETSC_COMM_WORLD));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "stored values (the value store): one rank %lu bytes, the largest of %d ranks %lu, ratio %.3f\n", (unsigned long)s.stored, size, most[0], (double)most[0] / (double)s.stored));
    PetscCall(
        PetscPrintf(PETSC_COMM_WORLD, "all bytes a forward and backward pass allocates (the layers' state included): one rank %lu, the largest of %d ranks %lu, ratio %.3f\n", (unsigned long)s.bytes, size, most[1], (double)most[1] / (double)s.bytes));
    PetscCheck(ratio <= 0 || (double)most[0] <= ratio * (double)s.stored, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "a rank stores %lu bytes of values, more than %.2f of one rank's %lu", most[0], (double)ratio, (unsigned long)s.stored);
    PetscCheck(totalratio <= 0 || (double)most[1] <= totalratio * (double)s.bytes, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "a rank allocates %lu bytes for a pass, more than %.2f of one rank's %lu", most[1], (double)totalratio, (unsigned long)s.bytes);
  }
  PetscCall(SideDestroy(&w));
  PetscCall(SideDestroy(&s));
  PetscCall(PetscFinalize());
  return 0;
}
