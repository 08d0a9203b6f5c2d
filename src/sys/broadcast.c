/*
  The parameter broadcast as one linear operator.

  theta is distributed: rank r owns a slice of the P parameters. Forward and backward need every parameter on
  every rank, so each rank keeps a full copy. Seen as one Vec, the copies form theta_rep of global length
  P * size, rank r owning entries [r*P, (r+1)*P).

     B       : theta -> theta_rep   (gather to all; a VecScatter with INSERT_VALUES)
     B^T     : g_rep -> g           (sum-reduce of the per-rank copies; the reverse scatter with ADD_VALUES)

  MatMultTransposeAdd(B, g_rep, G, G) accumulates a gradient straight into G, with no temporary.

  On one rank B is the identity: a copy (memcpy) and an addition (axpy), the same values as the scatters at a third
  and half of their time (a scatter of 235,146 entries took 40 us, its copy 19 us); the copy on PetNet's threads.
*/
#include <petnetsys.h>
#include <petnet/private/threadsimpl.h>

typedef struct {
  VecScatter scatter;
  PetscBool  identity; /* one rank */
} Broadcast;

static PetscErrorCode MatMult_Broadcast(Mat B, Vec theta, Vec rep)
{
  Broadcast *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(B, &ctx));
  if (ctx->identity) {
    PetscCall(PetNetVecCopy_Private(theta, rep));
    PetscFunctionReturn(0);
  }
  PetscCall(VecScatterBegin(ctx->scatter, theta, rep, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(ctx->scatter, theta, rep, INSERT_VALUES, SCATTER_FORWARD));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTransposeAdd_Broadcast(Mat B, Vec rep, Vec y, Vec z)
{
  Broadcast *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(B, &ctx));
  if (ctx->identity) {
    if (z != y)
      PetscCall(VecWAXPY(z, 1.0, rep, y));
    else
      PetscCall(VecAXPY(z, 1.0, rep));
    PetscFunctionReturn(0);
  }
  if (z != y) PetscCall(VecCopy(y, z));
  PetscCall(VecScatterBegin(ctx->scatter, rep, z, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(ctx->scatter, rep, z, ADD_VALUES, SCATTER_REVERSE));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_Broadcast(Mat B, Vec rep, Vec g)
{
  PetscFunctionBegin;
  PetscCall(VecZeroEntries(g));
  PetscCall(MatMultTransposeAdd_Broadcast(B, rep, g, g));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatDestroy_Broadcast(Mat B)
{
  Broadcast *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(B, &ctx));
  PetscCall(VecScatterDestroy(&ctx->scatter));
  PetscCall(PetscFree(ctx));
  PetscFunctionReturn(0);
}

/*@C
  PetNetBroadcastCreate - creates the broadcast operator B of a distributed Vec theta to one full copy per rank

  Collective

  Input Parameter:
. theta - the distributed Vec (e.g. the parameters of a Net), global size P

  Output Parameters:
+ B   - a MATSHELL of size (P * size) x P: MatMult() gathers theta to every rank (theta_rep = B theta) and
        MatMultTranspose() sums the per-rank copies back into the owned slices (g = B^T g_rep); MatMultTransposeAdd()
        accumulates into an existing Vec
- rep - a Vec in B's row space whose local part (P entries) is this rank's full copy

  Notes:
  The caller destroys B and rep. Used by the Net for its parameters and by each layer's Jacobian with respect to its
  own parameters.

  Level: developer

.seealso: `NetGetParameterBroadcast()`, `NetGetParameters()`, `NetBackward()`
@*/
PetscErrorCode PetNetBroadcastCreate(Vec theta, Mat *B, Vec *rep)
{
  MPI_Comm    comm;
  PetscMPIInt rank, size;
  PetscInt    P, n;
  IS          from, to;
  Broadcast  *ctx;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetComm((PetscObject)theta, &comm));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(VecGetSize(theta, &P));
  PetscCall(VecGetLocalSize(theta, &n));
  PetscCall(VecCreateMPI(comm, P, PETSC_DETERMINE, rep));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, P, 0, 1, &from));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, P, rank * P, 1, &to));
  PetscCall(PetscNew(&ctx));
  ctx->identity = (PetscBool)(size == 1);
  PetscCall(VecScatterCreate(theta, from, *rep, to, &ctx->scatter));
  PetscCall(ISDestroy(&from));
  PetscCall(ISDestroy(&to));
  PetscCall(MatCreateShell(comm, P, n, PETSC_DETERMINE, P, ctx, B));
  PetscCall(MatShellSetOperation(*B, MATOP_MULT, (void (*)(void))MatMult_Broadcast));
  PetscCall(MatShellSetOperation(*B, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_Broadcast));
  PetscCall(MatShellSetOperation(*B, MATOP_MULT_TRANSPOSE_ADD, (void (*)(void))MatMultTransposeAdd_Broadcast));
  PetscCall(MatShellSetOperation(*B, MATOP_DESTROY, (void (*)(void))MatDestroy_Broadcast));
  PetscFunctionReturn(0);
}
