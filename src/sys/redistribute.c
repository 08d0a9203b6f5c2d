/*
  Data movement between layouts as linear operators, each a MATSHELL over one PetscSF.

  Every operator is built from one star forest, G = the box reader of a layout (PetNetLayoutCreateBoxSF_Private()):
  its leaves are the entries of a box of the tensor on this rank, row-major; its roots are the local entries of a
  layout L; each leaf inside the tensor hangs from the entry of L's canonical copy (coordinate 0 along L's
  replication axes) with the same global index. As a matrix (rows: leaves, cols: roots) G is a 0/1 matrix with at most
  one 1 per row (zero rows for padding), so

     G x    = PetscSFBcast(x, MPI_REPLACE)      (padding rows zeroed first)
     G^T y  = PetscSFReduce(y, MPI_SUM)         (roots zeroed first: every leaf adds into its root)

  are exact adjoints, with no arithmetic in G x (a copy, so bitwise) and only sums in G^T y. The operators:

     R = Redistribute(from, to) = G(box: to's block, read from `from`)
         y = R x: every entry of every rank's block of `to`, replicas included, copied from from's canonical copy.
         R^T: each entry of every replica of `to` added into from's canonical owner; from's other replicas get 0.
     S = SumReduce(partial, to) = Redistribute(to, partial)^T
         y = S x: the canonical copy of `to` gets, at each entry, the sum over all the copies held in `partial`
         (partial sums along partial's replication axes); to's non-canonical replicas get 0. S^T is that broadcast.
     A = AllReduce(L) = B B^T with B = Redistribute(L, L)
         y = A x: every replica gets the sum of the entry over all the replicas. A = A^T.

  MatMultAdd and MatMultTransposeAdd are cheap: the same SF calls with MPI_SUM onto a copy of the addend.
*/
#include <petnet/private/layoutimpl.h>

typedef enum {
  SFSHELL_FORWARD,  /* y = G x, leaves <- roots */
  SFSHELL_REVERSE,  /* y = G^T x, roots <- leaves */
  SFSHELL_ALLREDUCE /* y = G G^T x (G on L's own block: every replica <- sum of the replicas) */
} SFShellKind;

typedef struct {
  PetscSF      sf;
  SFShellKind  kind;
  PetscBool    padded; /* some leaves hang from no root: G x must zero them */
  PetscScalar *work;   /* ALLREDUCE: the root space */
  PetscInt     nroots;
} SFShell;

/* leaf <- root: leaf = root (op MPI_REPLACE, padding zeroed first) or leaf += root (MPI_SUM) */
static PetscErrorCode SFShellBcast(SFShell *ctx, const PetscScalar *root, Vec leaf, MPI_Op op)
{
  PetscScalar *l;

  PetscFunctionBegin;
  if (op == MPI_REPLACE && ctx->padded) PetscCall(VecZeroEntries(leaf));
  PetscCall(VecGetArray(leaf, &l));
  PetscCall(PetscSFBcastBegin(ctx->sf, MPIU_SCALAR, root, l, op));
  PetscCall(PetscSFBcastEnd(ctx->sf, MPIU_SCALAR, root, l, op));
  PetscCall(VecRestoreArray(leaf, &l));
  PetscFunctionReturn(0);
}

/* root += sum of its leaves */
static PetscErrorCode SFShellReduce(SFShell *ctx, Vec leaf, PetscScalar *root)
{
  const PetscScalar *l;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(leaf, &l));
  PetscCall(PetscSFReduceBegin(ctx->sf, MPIU_SCALAR, l, root, MPI_SUM));
  PetscCall(PetscSFReduceEnd(ctx->sf, MPIU_SCALAR, l, root, MPI_SUM));
  PetscCall(VecRestoreArrayRead(leaf, &l));
  PetscFunctionReturn(0);
}

/* y = G x (add: y = z + G x) */
static PetscErrorCode SFShellApplyG(SFShell *ctx, Vec x, Vec z, Vec y)
{
  const PetscScalar *r;

  PetscFunctionBegin;
  if (z && z != y) PetscCall(VecCopy(z, y));
  PetscCall(VecGetArrayRead(x, &r));
  PetscCall(SFShellBcast(ctx, r, y, z ? MPI_SUM : MPI_REPLACE));
  PetscCall(VecRestoreArrayRead(x, &r));
  PetscFunctionReturn(0);
}

/* y = G^T x (add: y = z + G^T x) */
static PetscErrorCode SFShellApplyGT(SFShell *ctx, Vec x, Vec z, Vec y)
{
  PetscScalar *r;

  PetscFunctionBegin;
  if (!z)
    PetscCall(VecZeroEntries(y));
  else if (z != y)
    PetscCall(VecCopy(z, y));
  PetscCall(VecGetArray(y, &r));
  PetscCall(SFShellReduce(ctx, x, r));
  PetscCall(VecRestoreArray(y, &r));
  PetscFunctionReturn(0);
}

/* y = G G^T x (add: y = z + G G^T x) */
static PetscErrorCode SFShellApplyGGT(SFShell *ctx, Vec x, Vec z, Vec y)
{
  PetscFunctionBegin;
  PetscCall(PetscArrayzero(ctx->work, ctx->nroots));
  PetscCall(SFShellReduce(ctx, x, ctx->work));
  if (z && z != y) PetscCall(VecCopy(z, y));
  PetscCall(SFShellBcast(ctx, ctx->work, y, z ? MPI_SUM : MPI_REPLACE));
  PetscFunctionReturn(0);
}

static PetscErrorCode SFShellApply(Mat M, Vec x, Vec z, Vec y, PetscBool transpose)
{
  SFShell *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(M, &ctx));
  PetscCall(PetscLogEventBegin(PETNETLAYOUT_Move, M, x, y, 0));
  if (ctx->kind == SFSHELL_ALLREDUCE)
    PetscCall(SFShellApplyGGT(ctx, x, z, y));
  else if ((ctx->kind == SFSHELL_FORWARD) != transpose)
    PetscCall(SFShellApplyG(ctx, x, z, y));
  else
    PetscCall(SFShellApplyGT(ctx, x, z, y));
  PetscCall(PetscLogEventEnd(PETNETLAYOUT_Move, M, x, y, 0));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMult_SFShell(Mat M, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(SFShellApply(M, x, NULL, y, PETSC_FALSE));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultAdd_SFShell(Mat M, Vec x, Vec z, Vec y)
{
  PetscFunctionBegin;
  PetscCall(SFShellApply(M, x, z, y, PETSC_FALSE));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_SFShell(Mat M, Vec x, Vec y)
{
  PetscFunctionBegin;
  PetscCall(SFShellApply(M, x, NULL, y, PETSC_TRUE));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTransposeAdd_SFShell(Mat M, Vec x, Vec z, Vec y)
{
  PetscFunctionBegin;
  PetscCall(SFShellApply(M, x, z, y, PETSC_TRUE));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatDestroy_SFShell(Mat M)
{
  SFShell *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(M, &ctx));
  PetscCall(PetscSFDestroy(&ctx->sf));
  PetscCall(PetscFree(ctx->work));
  PetscCall(PetscFree(ctx));
  PetscFunctionReturn(0);
}

static PetscErrorCode SFShellCreate(PetscSF sf, PetscInt boxsize, SFShellKind kind, Mat *M)
{
  SFShell *ctx;
  PetscInt nroots, nleaves, m, n;

  PetscFunctionBegin;
  PetscCall(PetscSFGetGraph(sf, &nroots, &nleaves, NULL, NULL));
  PetscCall(PetscNew(&ctx));
  ctx->sf     = sf;
  ctx->kind   = kind;
  ctx->padded = (PetscBool)(nleaves < boxsize);
  ctx->nroots = nroots;
  if (kind == SFSHELL_ALLREDUCE) PetscCall(PetscMalloc1(nroots, &ctx->work));
  m = kind == SFSHELL_REVERSE ? nroots : boxsize; /* rows: the output space */
  n = kind == SFSHELL_FORWARD ? nroots : boxsize; /* cols: the input space */
  PetscCall(MatCreateShell(PetscObjectComm((PetscObject)sf), m, n, PETSC_DETERMINE, PETSC_DETERMINE, ctx, M));
  PetscCall(MatShellSetOperation(*M, MATOP_MULT, (void (*)(void))MatMult_SFShell));
  PetscCall(MatShellSetOperation(*M, MATOP_MULT_ADD, (void (*)(void))MatMultAdd_SFShell));
  PetscCall(MatShellSetOperation(*M, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_SFShell));
  PetscCall(MatShellSetOperation(*M, MATOP_MULT_TRANSPOSE_ADD, (void (*)(void))MatMultTransposeAdd_SFShell));
  PetscCall(MatShellSetOperation(*M, MATOP_DESTROY, (void (*)(void))MatDestroy_SFShell));
  if (kind == SFSHELL_ALLREDUCE) PetscCall(MatSetOption(*M, MAT_SYMMETRIC, PETSC_TRUE));
  PetscFunctionReturn(0);
}

PetscErrorCode PetNetSFShellCreate_Private(PetscSF sf, PetscInt boxsize, PetscBool reverse, Mat *M)
{
  PetscFunctionBegin;
  PetscCall(SFShellCreate(sf, boxsize, reverse ? SFSHELL_REVERSE : SFSHELL_FORWARD, M));
  PetscFunctionReturn(0);
}

/* G: reads the block of `block` (its this-rank block, as a box) from the canonical copy of `source` */
static PetscErrorCode CreateBlockSF(PetNetLayout source, PetNetLayout block, PetscSF *sf, PetscInt *boxsize)
{
  PetscInt64 lo[PETNET_LAYOUT_MAX_DIM], hi[PETNET_LAYOUT_MAX_DIM];

  PetscFunctionBegin;
  for (PetscInt d = 0; d < block->ndim; d++) {
    PetscCheck(source->dims[d] == block->dims[d], PetscObjectComm((PetscObject)source), PETSC_ERR_ARG_INCOMP,
               "the two layouts differ along dim %" PetscInt_FMT " (%" PetscInt64_FMT " and %" PetscInt64_FMT " entries): data moves only between layouts of the same global shape", d, source->dims[d], block->dims[d]);
  }
  for (PetscInt d = 0; d < block->ndim; d++) {
    lo[d] = block->start[d];
    hi[d] = block->start[d] + block->size[d];
  }
  PetscCall(PetNetLayoutCreateBoxSF_Private(source, lo, hi, sf, boxsize));
  PetscFunctionReturn(0);
}

/*@
  PetNetRedistributeCreate - the operator R that moves a tensor from one layout to another: repartition, gather,
  broadcast along grid axes

  Collective

  Input Parameters:
+ from - the layout of the input, set up
- to   - the layout of the output, set up, with the same global shape and communicator

  Output Parameter:
. R - a MATSHELL with local rows the local size of `to` and local columns the local size of `from`

  Notes:
  y = R x: every entry of every rank's block in `to` (replicas included) is copied from the canonical copy in `from`
  (the replica with coordinate 0 along from's replication axes; other replicas of `from` are not read). This covers
  any repartition (sample-split <-> grid-split <-> channel-split, uneven splits) and the broadcast along grid axes
  (`to` replicated along them). MatMult() only copies, so R_inverse R x == x bitwise when x is the same on all of
  from's replicas.

  MatMultTranspose() is the exact adjoint: every copy in `to` is summed into from's canonical owner, and from's other
  replicas get 0. MatMultAdd() and MatMultTransposeAdd() are supported. Built from the ownership ranges alone (no
  communication), in O(local entries); the operator holds no reference to the layouts.

  Level: intermediate

.seealso: `PetNetSumReduceCreate()`, `PetNetAllReduceCreate()`, `PetNetHaloCreate()`, `PetNetLayoutCreateVec()`
@*/
PetscErrorCode PetNetRedistributeCreate(PetNetLayout from, PetNetLayout to, Mat *R)
{
  PetscSF  sf;
  PetscInt n;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(from, PETNETLAYOUT_CLASSID, 1);
  PetscValidHeaderSpecific(to, PETNETLAYOUT_CLASSID, 2);
  PetscValidPointer(R, 3);
  PetscCall(PetNetLayoutCheckPair_Private(from, to, "PetNetRedistributeCreate", "from", "to"));
  PetscCall(CreateBlockSF(from, to, &sf, &n));
  PetscCall(SFShellCreate(sf, n, SFSHELL_FORWARD, R));
  PetscFunctionReturn(0);
}

/*@
  PetNetSumReduceCreate - the operator S that sums partial results held on replicas into another layout

  Collective

  Input Parameters:
+ partial - the layout of the input: each replica (along partial's replication axes) holds a partial sum, set up
- to      - the layout of the output, set up, with the same global shape and communicator

  Output Parameter:
. S - a MATSHELL with local rows the local size of `to` and local columns the local size of `partial`

  Notes:
  y = S x: each entry of the canonical copy of `to` is the sum of that entry over all the copies in `partial`;
  to's non-canonical replicas get 0 (follow with PetNetRedistributeCreate(to, to) to fill them, or use
  PetNetAllReduceCreate() when `to` is `partial`). S is the transpose of PetNetRedistributeCreate(to, partial), and
  S^T (MatMultTranspose()) is that broadcast. MatMultAdd() and MatMultTransposeAdd() are supported.

  Level: intermediate

.seealso: `PetNetRedistributeCreate()`, `PetNetAllReduceCreate()`
@*/
PetscErrorCode PetNetSumReduceCreate(PetNetLayout partial, PetNetLayout to, Mat *S)
{
  PetscSF  sf;
  PetscInt n;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(partial, PETNETLAYOUT_CLASSID, 1);
  PetscValidHeaderSpecific(to, PETNETLAYOUT_CLASSID, 2);
  PetscValidPointer(S, 3);
  PetscCall(PetNetLayoutCheckPair_Private(partial, to, "PetNetSumReduceCreate", "partial", "to"));
  PetscCall(CreateBlockSF(to, partial, &sf, &n));
  PetscCall(SFShellCreate(sf, n, SFSHELL_REVERSE, S));
  PetscFunctionReturn(0);
}

/*@
  PetNetAllReduceCreate - the operator A that sums a tensor over the replicas of a layout and gives every replica
  the sum

  Collective

  Input Parameter:
. layout - the layout, set up

  Output Parameter:
. A - a square MATSHELL with the local size of the layout

  Notes:
  y = A x: at every entry, every replica (along the layout's replication axes) gets the sum of the entry over all
  the replicas. A = B B^T with B = PetNetRedistributeCreate(layout, layout): a sum-reduce into the canonical copy
  followed by its broadcast. A is symmetric: MatMultTranspose() is MatMult(). MatMultAdd() and
  MatMultTransposeAdd() are supported. On a layout without replication A is the identity.

  Level: intermediate

.seealso: `PetNetSumReduceCreate()`, `PetNetRedistributeCreate()`
@*/
PetscErrorCode PetNetAllReduceCreate(PetNetLayout layout, Mat *A)
{
  PetscSF  sf;
  PetscInt n;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(layout, PETNETLAYOUT_CLASSID, 1);
  PetscValidPointer(A, 2);
  PetscCall(PetNetLayoutCheckSetUp_Private(layout, "PetNetAllReduceCreate"));
  PetscCall(CreateBlockSF(layout, layout, &sf, &n));
  PetscCall(SFShellCreate(sf, n, SFSHELL_ALLREDUCE, A));
  PetscFunctionReturn(0);
}
