static const char help[] = "The parameter broadcast B (PetNetBroadcastCreate, NetGetParameterBroadcast): B v is v replicated on every\n"
                           "rank, B^T w is the sum over ranks of the per-rank copies, MatMultTransposeAdd adds it, and the dot-product\n"
                           "test |<Bv,w> - <v,B^T w>| <= 1e-12 |Bv||w| holds; for even, uneven and empty-rank layouts.\n";

#include <petnet.h>

/* Checks B built on theta's layout; name labels the output. */
static PetscErrorCode CheckBroadcast(const char name[], Mat B, Vec theta, PetscRandom rnd)
{
  PetscInt           P, m, M, n, N;
  Vec                v, w, Bv, BTw, y, vall, BTwall;
  VecScatter         toall;
  const PetscScalar *a, *b;
  PetscScalar       *sum, dot1, dot2;
  PetscReal          nBv, nw, doterr = 0, sumerr = 0, nsum = 0;
  PetscMPIInt        size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(VecGetSize(theta, &P));
  PetscCall(MatGetLocalSize(B, &m, &n));
  PetscCall(MatGetSize(B, &M, &N));
  PetscCheck(m == P && M == P * size && N == P, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: B is %" PetscInt_FMT " x %" PetscInt_FMT " with %" PetscInt_FMT " local rows, expected %" PetscInt_FMT " x %" PetscInt_FMT " with %" PetscInt_FMT, name, M, N, m,
             P * size, P, P);

  PetscCall(VecDuplicate(theta, &v));
  PetscCall(VecDuplicate(theta, &BTw));
  PetscCall(VecDuplicate(theta, &y));
  PetscCall(MatCreateVecs(B, NULL, &w));
  PetscCall(VecDuplicate(w, &Bv));
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(VecSetRandom(w, rnd));
  PetscCall(VecSetRandom(y, rnd));

  /* B v: this rank's local part is the whole of v */
  PetscCall(MatMult(B, v, Bv));
  PetscCall(VecScatterCreateToAll(v, &toall, &vall));
  PetscCall(VecScatterBegin(toall, v, vall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toall, v, vall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(Bv, &a));
  PetscCall(VecGetArrayRead(vall, &b));
  for (PetscInt i = 0; i < P; i++) PetscCheck(a[i] == b[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: (B v)[%" PetscInt_FMT "] = %g on this rank, but v[%" PetscInt_FMT "] = %g", name, i, (double)PetscRealPart(a[i]), i, (double)PetscRealPart(b[i]));
  PetscCall(VecRestoreArrayRead(vall, &b));
  PetscCall(VecRestoreArrayRead(Bv, &a));

  /* B^T w: the sum over ranks of each rank's P local entries of w */
  PetscCall(MatMultTranspose(B, w, BTw));
  PetscCall(PetscMalloc1(P, &sum));
  PetscCall(VecGetArrayRead(w, &a));
  PetscCall(PetscArraycpy(sum, a, P));
  PetscCall(VecRestoreArrayRead(w, &a));
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, sum, (PetscMPIInt)P, MPIU_SCALAR, MPIU_SUM, PETSC_COMM_WORLD));
  PetscCall(VecDuplicate(vall, &BTwall));
  PetscCall(VecScatterBegin(toall, BTw, BTwall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toall, BTw, BTwall, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(BTwall, &a));
  for (PetscInt i = 0; i < P; i++) {
    sumerr = PetscMax(sumerr, PetscAbsScalar(a[i] - sum[i]));
    nsum   = PetscMax(nsum, PetscAbsScalar(sum[i]));
  }
  PetscCall(VecRestoreArrayRead(BTwall, &a));
  PetscCheck(sumerr <= 1e-14 * nsum, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: B^T w differs from the sum over ranks by %g", name, (double)sumerr);

  /* MatMultTransposeAdd: y + B^T w, in place as NetBackward uses it */
  PetscCall(VecAXPY(BTw, 1.0, y));
  PetscCall(MatMultTransposeAdd(B, w, y, y));
  PetscCall(VecAXPY(BTw, -1.0, y));
  PetscCall(VecNorm(BTw, NORM_INFINITY, &sumerr));
  PetscCheck(sumerr <= 1e-14 * (nsum + 1), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: MatMultTransposeAdd(B, w, y, y) differs from y + B^T w by %g", name, (double)sumerr);

  /* dot-product test */
  if (P) {
    PetscCall(MatMultTranspose(B, w, BTw));
    PetscCall(VecDot(Bv, w, &dot1));
    PetscCall(VecDot(v, BTw, &dot2));
    PetscCall(VecNorm(Bv, NORM_2, &nBv));
    PetscCall(VecNorm(w, NORM_2, &nw));
    doterr = PetscAbsScalar(dot1 - dot2) / (nBv * nw);
    PetscCheck(doterr <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test |<Bv,w> - <v,B^T w>|/(|Bv||w|) = %g > 1e-12", name, (double)doterr);
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-40s P = %4" PetscInt_FMT ": B v replicated, B^T w summed, dot-product test ok\n", name, P));
  PetscCall(PetscInfo(NULL, "%s: dot-product error %g\n", name, (double)doterr));
  PetscCall(PetscFree(sum));
  PetscCall(VecScatterDestroy(&toall));
  PetscCall(VecDestroy(&vall));
  PetscCall(VecDestroy(&BTwall));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&Bv));
  PetscCall(VecDestroy(&BTw));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(0);
}

/* PetNetBroadcastCreate on a Vec of P entries; nlocal = PETSC_DECIDE, or this rank's share */
static PetscErrorCode CheckLayout(const char name[], PetscInt nlocal, PetscInt P, PetscRandom rnd)
{
  Vec theta, rep;
  Mat B;

  PetscFunctionBegin;
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, nlocal, P, &theta));
  PetscCall(PetNetBroadcastCreate(theta, &B, &rep));
  PetscCall(CheckBroadcast(name, B, theta, rnd));
  PetscCall(VecDestroy(&theta));
  PetscCall(VecDestroy(&rep));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckNet(const char layers[], PetscInt insize, PetscRandom rnd)
{
  PetNetShape in = {1, {insize}};
  Net         net;
  Mat         B;
  Vec         theta;
  char        name[128];

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetLayers(net, layers));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetParameterBroadcast(net, &B));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(PetscSNPrintf(name, sizeof(name), "Net %s", layers));
  PetscCall(CheckBroadcast(name, B, theta, rnd));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscRandom rnd;
  PetscMPIInt rank, size;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 31));
  PetscCall(PetscRandomSeed(rnd));

  PetscCall(CheckLayout("even split", PETSC_DECIDE, 8 * size, rnd));
  PetscCall(CheckLayout("uneven split", PETSC_DECIDE, 7, rnd));
  PetscCall(CheckLayout("fewer entries than ranks", PETSC_DECIDE, 3, rnd));
  PetscCall(CheckLayout("everything on the last rank", rank == size - 1 ? 10 : 0, 10, rnd));
  PetscCall(CheckLayout("no entries", PETSC_DECIDE, 0, rnd));
  PetscCall(CheckNet("dense:5,relu,dense:3", 4, rnd));
  PetscCall(CheckNet("dense:16,tanh,dense:8,gelu,dense:2", 9, rnd));
  PetscCall(CheckNet("relu", 4, rnd));

  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFinalize());
  return 0;
}
