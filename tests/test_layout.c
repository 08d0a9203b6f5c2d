static const char help[] = "PetNetLayout and the data-movement operators (PetNetRedistributeCreate, PetNetSumReduceCreate,\n"
                           "PetNetAllReduceCreate, PetNetHaloCreate, PetNetHaloCreateConv) over random pairs of layouts: random grids\n"
                           "factorising the communicator size, random uneven splits with empty blocks, random replication axes,\n"
                           "ndim 2..5. Asserts: the dot-product test |<Ax,y> - <x,A^T y>| <= 1e-13 |Ax||y| for every operator;\n"
                           "MatMultAdd/MatMultTransposeAdd agree with MatMult/MatMultTranspose; redistribution moves every entry to\n"
                           "where the layout says (values checked exactly, never read from a non-canonical replica); redistribution\n"
                           "followed by its inverse is bitwise the identity; sum-reduce and all-reduce equal direct sums exactly;\n"
                           "every halo box entry is the global tensor's value or 0 for padding.\n"
                           "-case dmda: PetNetLayoutCreateFromDMDA() on 1-D, 2-D and 3-D DMDAs, dof 1 and 3, ownership lx/ly/lz (uneven)\n"
                           "and PETSC_DECIDE: the block is the DMDA's box and the Vecs' local sizes and ranges agree; the field\n"
                           "f(k,j,i,c) written through DMDAVecGetArrayDOF and redistributed to rank 0 is f at every entry exactly and\n"
                           "bitwise the DMDA's natural ordering gathered there; dot-product tests; DMDA layout -> channel split -> back is\n"
                           "bitwise the identity.\n"
                           "Options: -ntrials N (default 25), -seed S, -case NAME (an error case, view, or dmda).\n";

#include <petnet.h>
#include <petscdmshell.h>

/* One random sequence, the same on every rank (the layouts must agree across ranks) */
static unsigned long long rng_state = 88172645463325252ULL;

static PetscInt Rand(PetscInt n) /* uniform in [0, n) */
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (PetscInt)(rng_state % (unsigned long long)n);
}

/* What the random layouts covered (printed, so that a run shows it tested what it claims) */
static PetscInt nlayouts = 0, nreplicated = 0, nemptyblock = 0, nmultiaxis = 0, nuneven = 0;

/* What the test chose for a layout, kept to compute the expected results independently of the library */
typedef struct {
  PetscInt     ndim, ngrid;
  PetscInt64   dims[PETNET_LAYOUT_MAX_DIM];
  PetscMPIInt  gdims[PETNET_LAYOUT_MAX_GRID];
  PetscInt     axis[PETNET_LAYOUT_MAX_DIM];   /* -1: not split */
  PetscInt64   off[PETNET_LAYOUT_MAX_DIM][8]; /* ownership ranges along axis[d] (<= 6 ranks per axis) */
  PetscBool    repl[PETNET_LAYOUT_MAX_GRID];  /* a replication axis */
  PetscBool    replicated;                    /* some replication axis has more than one rank */
  PetNetLayout L;
} Desc;

static void Coords(const Desc *D, PetscMPIInt r, PetscMPIInt c[])
{
  for (PetscInt a = D->ngrid - 1; a >= 0; a--) {
    c[a] = r % D->gdims[a];
    r /= D->gdims[a];
  }
}

static PetscBool Canonical(const Desc *D, PetscMPIInt r)
{
  PetscMPIInt c[PETNET_LAYOUT_MAX_GRID];

  Coords(D, r, c);
  for (PetscInt a = 0; a < D->ngrid; a++)
    if (D->repl[a] && c[a]) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* the block of rank r */
static void Block(const Desc *D, PetscMPIInt r, PetscInt64 start[], PetscInt64 size[])
{
  PetscMPIInt c[PETNET_LAYOUT_MAX_GRID];

  Coords(D, r, c);
  for (PetscInt d = 0; d < D->ndim; d++) {
    PetscInt k = D->axis[d] >= 0 ? c[D->axis[d]] : 0;

    start[d] = D->off[d][k];
    size[d]  = D->off[d][k + 1] - D->off[d][k];
  }
}

static PetscBool Holds(const Desc *D, PetscMPIInt r, const PetscInt64 idx[])
{
  PetscInt64 start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM];

  Block(D, r, start, size);
  for (PetscInt d = 0; d < D->ndim; d++)
    if (idx[d] < start[d] || idx[d] >= start[d] + size[d]) return PETSC_FALSE;
  return PETSC_TRUE;
}

/* the global tensor: f(idx) = row-major linear index + 1 (exact in double); g(r, idx): rank r's partial, a small integer */
static PetscScalar F(const Desc *D, const PetscInt64 idx[])
{
  PetscInt64 lin = 0;

  for (PetscInt d = 0; d < D->ndim; d++) lin = lin * D->dims[d] + idx[d];
  return (PetscScalar)(lin + 1);
}

static PetscScalar Gpart(const Desc *D, PetscMPIInt r, const PetscInt64 idx[])
{
  PetscInt64 lin = 0;

  for (PetscInt d = 0; d < D->ndim; d++) lin = lin * D->dims[d] + idx[d];
  return (PetscScalar)((lin * 7 + r * 13) % 17 - 8);
}

/* Next index of a box [lo, lo + ext) in row-major order; PETSC_FALSE past the end */
static PetscBool Next(PetscInt ndim, const PetscInt64 lo[], const PetscInt64 ext[], PetscInt64 idx[])
{
  for (PetscInt d = ndim - 1; d >= 0; d--) {
    if (++idx[d] < lo[d] + ext[d]) return PETSC_TRUE;
    idx[d] = lo[d];
  }
  return PETSC_FALSE;
}

static PetscInt64 BoxSize(PetscInt ndim, const PetscInt64 ext[])
{
  PetscInt64 n = 1;

  for (PetscInt d = 0; d < ndim; d++) n *= ext[d];
  return n;
}

/* A random layout of the shape in D (dims, ndim set): a random factorisation of the comm size into grid axes, each
   axis splitting a random distinct dim (unevenly, empty blocks included) or, if allowed, replicating */
static PetscErrorCode RandomLayout(MPI_Comm comm, PetscBool allowrepl, Desc *D)
{
  PetscMPIInt size, n, p;
  PetscInt    used[PETNET_LAYOUT_MAX_DIM] = {0};

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  D->ngrid = 1 + Rand(PetscMin(D->ndim, 3));
  for (PetscInt a = 0; a < D->ngrid; a++) D->gdims[a] = 1;
  for (n = size, p = 2; n > 1; p++)
    while (n % p == 0) {
      D->gdims[Rand(D->ngrid)] *= p;
      n /= p;
    }
  for (PetscInt d = 0; d < D->ndim; d++) D->axis[d] = -1;
  D->replicated = PETSC_FALSE;
  for (PetscInt a = 0; a < D->ngrid; a++) {
    D->repl[a] = PETSC_TRUE;
    if (!allowrepl || Rand(4)) { /* split a dim not split yet */
      PetscInt d = Rand(D->ndim);

      for (PetscInt t = 0; t < D->ndim && used[d]; t++) d = (d + 1) % D->ndim;
      if (!used[d]) {
        used[d]    = 1;
        D->axis[d] = a;
        D->repl[a] = PETSC_FALSE;
      }
    }
    if (D->repl[a] && D->gdims[a] > 1) D->replicated = PETSC_TRUE;
  }
  PetscCall(PetNetLayoutCreate(comm, &D->L));
  PetscCall(PetNetLayoutSetShape(D->L, D->ndim, D->dims));
  PetscCall(PetNetLayoutSetGrid(D->L, D->ngrid, D->gdims));
  for (PetscInt d = 0; d < D->ndim; d++) {
    PetscInt64 sizes[8], cut[8];
    PetscInt   g, mode;

    D->off[d][0] = 0;
    D->off[d][1] = D->dims[d];
    if (D->axis[d] < 0) continue;
    g    = D->gdims[D->axis[d]];
    mode = Rand(3);
    if (mode == 0) { /* even, as PETSC_DECIDE: the library's NULL */
      for (PetscInt c = 0; c < g; c++) D->off[d][c + 1] = D->off[d][c] + D->dims[d] / g + (c < D->dims[d] % g ? 1 : 0);
      PetscCall(PetNetLayoutSetSplit(D->L, d, D->axis[d], NULL));
      continue;
    }
    /* g - 1 random cuts, sorted: uneven, with empty blocks where cuts coincide */
    for (PetscInt c = 0; c < g - 1; c++) cut[c] = Rand(D->dims[d] + 1);
    for (PetscInt c = 1; c < g - 1; c++)
      for (PetscInt e = c; e > 0 && cut[e - 1] > cut[e]; e--) {
        PetscInt64 t = cut[e];

        cut[e]     = cut[e - 1];
        cut[e - 1] = t;
      }
    for (PetscInt c = 0; c < g; c++) {
      D->off[d][c + 1] = c < g - 1 ? cut[c] : D->dims[d];
      sizes[c]         = D->off[d][c + 1] - D->off[d][c];
    }
    PetscCall(PetNetLayoutSetSplit(D->L, d, D->axis[d], sizes));
  }
  PetscCall(PetNetLayoutSetUp(D->L));
  {
    PetscInt  naxes = 0;
    PetscBool empty = PETSC_FALSE, uneven = PETSC_FALSE;

    for (PetscInt a = 0; a < D->ngrid; a++) naxes += D->gdims[a] > 1;
    for (PetscInt d = 0; d < D->ndim; d++)
      if (D->axis[d] >= 0)
        for (PetscInt c = 0; c < D->gdims[D->axis[d]]; c++) {
          PetscInt64 n = D->off[d][c + 1] - D->off[d][c];

          if (!n) empty = PETSC_TRUE;
          if (n != D->off[d][1] - D->off[d][0]) uneven = PETSC_TRUE;
        }
    nlayouts++;
    nreplicated += D->replicated;
    nemptyblock += empty;
    nuneven += uneven;
    nmultiaxis += naxes > 1;
  }
  PetscFunctionReturn(0);
}

static PetscReal worst     = 0; /* the largest dot-product ratio seen */
static PetscInt  ndottests = 0;

/* |<Ax,y> - <x,A^T y>| <= 1e-13 |Ax||y| over a few random x, y; and the Add variants against MatMult/MatMultTranspose */
static PetscErrorCode DotTest(const char name[], Mat A, PetscRandom rnd)
{
  Vec       x, y, Ax, ATy, z, w;
  PetscReal nAx, ny, nx, err;

  PetscFunctionBegin;
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &Ax));
  PetscCall(VecDuplicate(y, &z));
  PetscCall(VecDuplicate(x, &ATy));
  PetscCall(VecDuplicate(x, &w));
  for (PetscInt k = 0; k < 3; k++) {
    PetscScalar d1, d2;

    PetscCall(VecSetRandom(x, rnd));
    PetscCall(VecSetRandom(y, rnd));
    PetscCall(VecSetRandom(Ax, rnd)); /* the outputs start as garbage: MatMult must overwrite (or zero) every entry */
    PetscCall(VecSetRandom(ATy, rnd));
    PetscCall(MatMult(A, x, Ax));
    PetscCall(MatMultTranspose(A, y, ATy));
    PetscCall(VecDot(Ax, y, &d1));
    PetscCall(VecDot(x, ATy, &d2));
    PetscCall(VecNorm(Ax, NORM_2, &nAx));
    PetscCall(VecNorm(y, NORM_2, &ny));
    if (nAx * ny > 0) {
      err   = PetscAbsScalar(d1 - d2) / (nAx * ny);
      worst = PetscMax(worst, err);
      PetscCheck(err <= 1e-13, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test |<Ax,y> - <x,A^T y>|/(|Ax||y|) = %g > 1e-13", name, (double)err);
    } else
      PetscCheck(PetscAbsScalar(d2) == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: A x = 0 but <x, A^T y> = %g", name, (double)PetscRealPart(d2));
    ndottests++;
  }
  /* MatMultAdd(A, x, z, z) = z + A x, MatMultTransposeAdd(A, y, w, w) = w + A^T y */
  PetscCall(VecSetRandom(z, rnd));
  PetscCall(VecAXPY(Ax, 1.0, z));
  PetscCall(MatMultAdd(A, x, z, z));
  PetscCall(VecAXPY(Ax, -1.0, z));
  PetscCall(VecNorm(Ax, NORM_INFINITY, &err));
  PetscCall(VecNorm(z, NORM_INFINITY, &nAx));
  PetscCheck(err <= 1e-14 * (1 + nAx), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: MatMultAdd differs from MatMult by %g", name, (double)err);
  PetscCall(VecSetRandom(w, rnd));
  PetscCall(VecAXPY(ATy, 1.0, w));
  PetscCall(MatMultTransposeAdd(A, y, w, w));
  PetscCall(VecAXPY(ATy, -1.0, w));
  PetscCall(VecNorm(ATy, NORM_INFINITY, &err));
  PetscCall(VecNorm(w, NORM_INFINITY, &nx));
  PetscCheck(err <= 1e-13 * (1 + nx), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: MatMultTransposeAdd differs from MatMultTranspose by %g", name, (double)err);
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&Ax));
  PetscCall(VecDestroy(&ATy));
  PetscCall(VecDestroy(&z));
  PetscCall(VecDestroy(&w));
  PetscFunctionReturn(0);
}

/* v = the tensor f on every rank's block of D; non-canonical replicas get f + 1e6 when poison (a read from them shows) */
static PetscErrorCode FillTensor(const Desc *D, Vec v, PetscBool poison)
{
  PetscMPIInt  rank;
  PetscInt64   start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM], idx[PETNET_LAYOUT_MAX_DIM];
  PetscScalar *a;
  PetscInt     n, i = 0;
  PetscBool    canon;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  canon = Canonical(D, rank);
  PetscCall(PetNetLayoutGetBlock(D->L, start, size));
  PetscCall(VecGetLocalSize(v, &n));
  PetscCheck(n == BoxSize(D->ndim, size), PETSC_COMM_SELF, PETSC_ERR_PLIB, "local size %" PetscInt_FMT " is not the block's", n);
  PetscCall(VecGetArrayWrite(v, &a));
  if (n) {
    for (PetscInt d = 0; d < D->ndim; d++) idx[d] = start[d];
    do a[i++] = F(D, idx) + (poison && !canon ? 1e6 : 0);
    while (Next(D->ndim, start, size, idx));
  }
  PetscCall(VecRestoreArrayWrite(v, &a));
  PetscFunctionReturn(0);
}

/* The local part of y is the box [lo, lo + ext) of f (0 outside the tensor); ext = 0 everywhere for an empty box */
static PetscErrorCode CheckBox(const char name[], const Desc *D, const PetscInt64 lo[], const PetscInt64 ext[], Vec y)
{
  PetscInt64         idx[PETNET_LAYOUT_MAX_DIM];
  const PetscScalar *a;
  PetscInt           n, i = 0;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(y, &n));
  PetscCheck(n == BoxSize(D->ndim, ext), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: local size %" PetscInt_FMT ", expected the box's %" PetscInt64_FMT, name, n, BoxSize(D->ndim, ext));
  if (!n) PetscFunctionReturn(0);
  PetscCall(VecGetArrayRead(y, &a));
  for (PetscInt d = 0; d < D->ndim; d++) idx[d] = lo[d];
  do {
    PetscBool   inside = PETSC_TRUE;
    PetscScalar expect;

    for (PetscInt d = 0; d < D->ndim; d++)
      if (idx[d] < 0 || idx[d] >= D->dims[d]) inside = PETSC_FALSE;
    expect = inside ? F(D, idx) : 0;
    PetscCheck(a[i] == expect, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: local entry %" PetscInt_FMT " is %g, expected %g", name, i, (double)PetscRealPart(a[i]), (double)PetscRealPart(expect));
    i++;
  } while (Next(D->ndim, lo, ext, idx));
  PetscCall(VecRestoreArrayRead(y, &a));
  PetscFunctionReturn(0);
}

/* x on P: rank r's entries are g(r, idx). Checks y on T: entry = sum over P's ranks holding idx of g (all of T's
   replicas when all, else the canonical one and 0 on the others) */
static PetscErrorCode CheckSums(const char name[], const Desc *P, const Desc *T, PetscBool all, Mat M)
{
  PetscMPIInt        rank, size;
  PetscInt64         start[PETNET_LAYOUT_MAX_DIM], sz[PETNET_LAYOUT_MAX_DIM], idx[PETNET_LAYOUT_MAX_DIM];
  Vec                x, y;
  PetscScalar       *a;
  const PetscScalar *b;
  PetscInt           n, i = 0;
  PetscBool          canon;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetNetLayoutCreateVec(P->L, &x));
  PetscCall(PetNetLayoutCreateVec(T->L, &y));
  PetscCall(VecGetLocalSize(x, &n));
  PetscCall(PetNetLayoutGetBlock(P->L, start, sz));
  PetscCall(VecGetArrayWrite(x, &a));
  if (n) {
    for (PetscInt d = 0; d < P->ndim; d++) idx[d] = start[d];
    do a[i++] = Gpart(P, rank, idx);
    while (Next(P->ndim, start, sz, idx));
  }
  PetscCall(VecRestoreArrayWrite(x, &a));
  PetscCall(VecSet(y, 42.0));
  PetscCall(MatMult(M, x, y));
  canon = Canonical(T, rank);
  PetscCall(VecGetLocalSize(y, &n));
  PetscCall(PetNetLayoutGetBlock(T->L, start, sz));
  PetscCall(VecGetArrayRead(y, &b));
  i = 0;
  if (n) {
    for (PetscInt d = 0; d < T->ndim; d++) idx[d] = start[d];
    do {
      PetscScalar expect = 0;

      if (all || canon)
        for (PetscMPIInt r = 0; r < size; r++)
          if (Holds(P, r, idx)) expect += Gpart(P, r, idx);
      PetscCheck(b[i] == expect, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: local entry %" PetscInt_FMT " is %g, the direct sum is %g", name, i, (double)PetscRealPart(b[i]), (double)PetscRealPart(expect));
      i++;
    } while (Next(T->ndim, start, sz, idx));
  }
  PetscCall(VecRestoreArrayRead(y, &b));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscFunctionReturn(0);
}

/* R = Redistribute(A, B): values, inverse bitwise, dot test */
static PetscErrorCode CheckRedistribute(const Desc *A, const Desc *B, PetscRandom rnd)
{
  Mat        R, Rinv;
  Vec        x, y, z;
  PetscInt64 start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM];
  PetscBool  same;

  PetscFunctionBegin;
  PetscCall(PetNetRedistributeCreate(A->L, B->L, &R));
  PetscCall(PetNetRedistributeCreate(B->L, A->L, &Rinv));
  PetscCall(PetNetLayoutCreateVec(A->L, &x));
  PetscCall(PetNetLayoutCreateVec(B->L, &y));
  PetscCall(VecDuplicate(x, &z));
  PetscCall(FillTensor(A, x, PETSC_TRUE));
  PetscCall(VecSet(y, 42.0));
  PetscCall(MatMult(R, x, y));
  PetscCall(PetNetLayoutGetBlock(B->L, start, size));
  PetscCall(CheckBox("redistribute", B, start, size, y));
  /* the inverse, bitwise: on the tensor (the same on all replicas) and, when A has no replicas, on random data */
  PetscCall(FillTensor(A, x, PETSC_FALSE));
  for (PetscInt k = 0; k < 2; k++) {
    if (k == 1) {
      if (A->replicated) break;
      PetscCall(VecSetRandom(x, rnd));
    }
    PetscCall(MatMult(R, x, y));
    PetscCall(MatMult(Rinv, y, z));
    PetscCall(VecEqual(x, z, &same)); /* memcmp of the local arrays, reduced */
    PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "redistribute: R^-1 R x differs from x (%s data)", k ? "random" : "consistent");
  }
  PetscCall(DotTest("redistribute", R, rnd));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&z));
  PetscCall(MatDestroy(&R));
  PetscCall(MatDestroy(&Rinv));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckHalo(const Desc *A, PetscRandom rnd)
{
  PetscInt64 lo[PETNET_LAYOUT_MAX_DIM], hi[PETNET_LAYOUT_MAX_DIM], start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM], blo[PETNET_LAYOUT_MAX_DIM], ext[PETNET_LAYOUT_MAX_DIM];
  PetscInt   n;
  Mat        H;
  Vec        x, y;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < A->ndim; d++) {
    lo[d] = Rand(3);
    hi[d] = Rand(3);
  }
  PetscCall(PetNetHaloCreate(A->L, lo, hi, &H));
  PetscCall(PetNetLayoutGetBlock(A->L, start, size));
  PetscCall(PetNetLayoutGetLocalSize(A->L, &n));
  for (PetscInt d = 0; d < A->ndim; d++) {
    blo[d] = start[d] - lo[d];
    ext[d] = n ? size[d] + lo[d] + hi[d] : 0;
  }
  PetscCall(MatCreateVecs(H, &x, &y));
  PetscCall(FillTensor(A, x, PETSC_TRUE));
  PetscCall(VecSet(y, 42.0)); /* the halo's padding must be zeroed, not left as it was */
  PetscCall(MatMult(H, x, y));
  PetscCall(CheckBox("halo", A, blo, ext, y));
  PetscCall(DotTest("halo", H, rnd));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(MatDestroy(&H));
  PetscFunctionReturn(0);
}

/* A convolution from A: random kernel/stride/padding per dim (samples untouched, the last dim sometimes read whole) */
static PetscErrorCode CheckHaloConv(MPI_Comm comm, const Desc *A, PetscRandom rnd)
{
  PetscInt   kernel[PETNET_LAYOUT_MAX_DIM], stride[PETNET_LAYOUT_MAX_DIM], pad[PETNET_LAYOUT_MAX_DIM], n;
  PetscInt64 start[PETNET_LAYOUT_MAX_DIM], size[PETNET_LAYOUT_MAX_DIM], blo[PETNET_LAYOUT_MAX_DIM], ext[PETNET_LAYOUT_MAX_DIM];
  Desc       O = *A;
  Mat        H;
  Vec        x, y;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < A->ndim; d++) {
    kernel[d] = 1;
    stride[d] = 1;
    pad[d]    = 0;
    if (d == A->ndim - 1 && Rand(2)) {
      kernel[d] = 0; /* read whole: out's extent is free */
      O.dims[d] = 1 + Rand(4);
      continue;
    }
    if (d > 0) {
      kernel[d] = 1 + Rand(3);
      stride[d] = 1 + Rand(2);
      pad[d]    = Rand(kernel[d]);
    }
    O.dims[d] = A->dims[d] + 2 * pad[d] >= kernel[d] ? (A->dims[d] + 2 * pad[d] - kernel[d]) / stride[d] + 1 : 0;
  }
  PetscCall(RandomLayout(comm, PETSC_TRUE, &O));
  PetscCall(PetNetHaloCreateConv(A->L, O.L, kernel, stride, pad, &H));
  PetscCall(PetNetLayoutGetBlock(O.L, start, size));
  PetscCall(PetNetLayoutGetLocalSize(O.L, &n));
  for (PetscInt d = 0; d < A->ndim; d++) {
    if (kernel[d] == 0) {
      blo[d] = 0;
      ext[d] = n ? A->dims[d] : 0;
    } else {
      blo[d] = start[d] * stride[d] - pad[d];
      ext[d] = n ? (size[d] - 1) * stride[d] + kernel[d] : 0;
    }
  }
  PetscCall(MatCreateVecs(H, &x, &y));
  PetscCall(FillTensor(A, x, PETSC_TRUE));
  PetscCall(VecSet(y, 42.0));
  PetscCall(MatMult(H, x, y));
  PetscCall(CheckBox("halo conv", A, blo, ext, y));
  PetscCall(DotTest("halo conv", H, rnd));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(MatDestroy(&H));
  PetscCall(PetNetLayoutDestroy(&O.L));
  PetscFunctionReturn(0);
}

static PetscErrorCode Trial(MPI_Comm comm, PetscRandom rnd)
{
  Desc A, B;
  Mat  S, AR;

  PetscFunctionBegin;
  A.ndim = 2 + Rand(4);
  for (PetscInt d = 0; d < A.ndim; d++) A.dims[d] = Rand(25) ? 1 + Rand(d ? 5 : 8) : 0;
  B = A;
  PetscCall(RandomLayout(comm, PETSC_TRUE, &A));
  PetscCall(RandomLayout(comm, PETSC_TRUE, &B));
  PetscCall(CheckRedistribute(&A, &B, rnd));

  PetscCall(PetNetSumReduceCreate(A.L, B.L, &S));
  PetscCall(CheckSums("sum-reduce", &A, &B, PETSC_FALSE, S));
  PetscCall(DotTest("sum-reduce", S, rnd));
  PetscCall(MatDestroy(&S));

  PetscCall(PetNetAllReduceCreate(A.L, &AR));
  PetscCall(CheckSums("all-reduce", &A, &A, PETSC_TRUE, AR));
  PetscCall(DotTest("all-reduce", AR, rnd));
  PetscCall(MatDestroy(&AR));

  PetscCall(CheckHalo(&A, rnd));
  PetscCall(CheckHaloConv(comm, &B, rnd));
  PetscCall(PetNetLayoutDestroy(&A.L));
  PetscCall(PetNetLayoutDestroy(&B.L));
  PetscFunctionReturn(0);
}

/* Bad input: each case ends in the error a user would see */
static PetscErrorCode ErrorCase(MPI_Comm comm, const char name[])
{
  PetscMPIInt  size;
  PetNetLayout L, L2;
  PetscBool    is;
  Mat          M;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetNetLayoutCreate(comm, &L));
  PetscCall(PetscStrcmp(name, "sizes_sum", &is));
  if (is) { /* sizes along axis 0 summing to 7 for a dim of 8 */
    PetscInt64 dims[2] = {2, 8}, sizes[8] = {0};

    for (PetscMPIInt r = 0; r < size; r++) sizes[r] = r ? 1 : 8 - size;
    PetscCall(PetNetLayoutSetShape(L, 2, dims));
    PetscCall(PetNetLayoutSetSplit(L, 1, 0, sizes));
    PetscCall(PetNetLayoutSetUp(L));
  }
  PetscCall(PetscStrcmp(name, "grid_product", &is));
  if (is) {
    PetscMPIInt g[2] = {2, 2};

    PetscCall(PetNetLayoutSetGrid(L, 2, g));
  }
  PetscCall(PetscStrcmp(name, "axis_twice", &is));
  if (is) {
    PetscInt64 dims[3] = {4, 4, 3};

    PetscCall(PetNetLayoutSetShape(L, 3, dims));
    PetscCall(PetNetLayoutSetSplit(L, 0, 0, NULL));
    PetscCall(PetNetLayoutSetSplit(L, 1, 0, NULL));
    PetscCall(PetNetLayoutSetUp(L));
  }
  PetscCall(PetscStrcmp(name, "too_big", &is));
  if (is) { /* 2^16 x 2^16 on one rank: 2^32 entries */
    PetscInt64 dims[2] = {65536, 65536};

    PetscCall(PetNetLayoutSetShape(L, 2, dims));
    PetscCall(PetNetLayoutSetUp(L));
  }
  PetscCall(PetscStrcmp(name, "shape_mismatch", &is));
  if (is) {
    PetscInt64 a[2] = {2, 3}, b[2] = {2, 4};

    PetscCall(PetNetLayoutSetShape(L, 2, a));
    PetscCall(PetNetLayoutSetUp(L));
    PetscCall(PetNetLayoutCreate(comm, &L2));
    PetscCall(PetNetLayoutSetShape(L2, 2, b));
    PetscCall(PetNetLayoutSetUp(L2));
    PetscCall(PetNetRedistributeCreate(L, L2, &M));
  }
  PetscCall(PetscStrcmp(name, "conv_shape", &is));
  if (is) { /* kernel 3, stride 2, pad 1 maps 8 entries to 4; out has 5 */
    PetscInt64 a[3] = {2, 8, 3}, b[3] = {2, 5, 3};
    PetscInt   k[3] = {1, 3, 0}, s[3] = {1, 2, 1}, p[3] = {0, 1, 0};

    PetscCall(PetNetLayoutSetShape(L, 3, a));
    PetscCall(PetNetLayoutSetUp(L));
    PetscCall(PetNetLayoutCreate(comm, &L2));
    PetscCall(PetNetLayoutSetShape(L2, 3, b));
    PetscCall(PetNetLayoutSetUp(L2));
    PetscCall(PetNetHaloCreateConv(L, L2, k, s, p, &M));
  }
  PetscCall(PetscStrcmp(name, "split_count", &is));
  if (is) { /* sizes given for the default 1-D grid, then the grid changed */
    PetscInt64  dims[2] = {2, 8}, sizes[8] = {0};
    PetscMPIInt g[2] = {1, size};

    sizes[0] = 8;
    PetscCall(PetNetLayoutSetShape(L, 2, dims));
    PetscCall(PetNetLayoutSetSplit(L, 1, 0, sizes));
    PetscCall(PetNetLayoutSetGrid(L, 2, g));
    PetscCall(PetNetLayoutSetUp(L));
  }
  PetscCall(PetscStrcmp(name, "no_shape", &is));
  if (is) PetscCall(PetNetLayoutSetUp(L));
  PetscCall(PetscStrcmp(name, "dmda_type", &is));
  if (is) { /* a DM that is not a DMDA */
    DM dm;

    PetscCall(DMShellCreate(comm, &dm));
    PetscCall(PetNetLayoutCreateFromDMDA(dm, &L2));
  }
  PetscCall(PetscStrcmp(name, "dmda_setup", &is));
  if (is) { /* a DMDA before DMSetUp() */
    DM da;

    PetscCall(DMDACreate2d(comm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, 8, 8, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
    PetscCall(PetNetLayoutCreateFromDMDA(da, &L2));
  }
  SETERRQ(comm, PETSC_ERR_USER, "error case %s did not fail", name);
}

/* Fixed layouts of 8x5x3, viewed: on a grid 2 x (size/2) (size even) dims 0 (5,3) and 1 split, else dim 1 split over
   all ranks; the sample split with 2 samples a rank; channels split along axis 0 with axis 1 replicating */
static PetscErrorCode ViewCase(MPI_Comm comm)
{
  PetscMPIInt  size;
  PetNetLayout L, S;
  PetscInt64   dims[3] = {8, 5, 3}, sizes[2] = {5, 3};

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetNetLayoutCreate(comm, &L));
  PetscCall(PetNetLayoutSetShape(L, 3, dims));
  if (size % 2 == 0) {
    PetscMPIInt g[2] = {2, size / 2};

    PetscCall(PetNetLayoutSetGrid(L, 2, g));
    PetscCall(PetNetLayoutSetSplit(L, 0, 0, sizes));
  }
  PetscCall(PetNetLayoutSetSplit(L, 1, size % 2 == 0 ? 1 : 0, NULL));
  PetscCall(PetNetLayoutSetUp(L));
  PetscCall(PetNetLayoutView(L, NULL));
  PetscCall(PetNetLayoutCreateSampleSplit(comm, 3, dims, 2, &S));
  PetscCall(PetNetLayoutView(S, PETSC_VIEWER_STDOUT_(comm)));
  PetscCall(PetNetLayoutDestroy(&L));
  { /* channels split along axis 0, axis 1 replicating */
    PetscMPIInt g[2] = {size % 2 ? 1 : 2, size % 2 ? size : size / 2};

    PetscCall(PetNetLayoutCreate(comm, &L));
    PetscCall(PetscObjectSetName((PetscObject)L, "replicated"));
    PetscCall(PetNetLayoutSetShape(L, 3, dims));
    PetscCall(PetNetLayoutSetGrid(L, 2, g));
    PetscCall(PetNetLayoutSetSplit(L, 2, 0, NULL));
    PetscCall(PetNetLayoutSetUp(L));
    PetscCall(PetNetLayoutView(L, NULL));
    PetscCall(PetNetLayoutDestroy(&L));
  }
  PetscCall(PetNetLayoutDestroy(&S));
  PetscFunctionReturn(0);
}

/* The DMDA field: f(k, j, i, c) = 1 + c + 4 (i + 64 (j + 64 k)), distinct and exact in double (grids < 64, dof <= 4) */
static PetscScalar FieldValue(PetscInt k, PetscInt j, PetscInt i, PetscInt c)
{
  return (PetscScalar)(1 + c + 4 * (i + 64 * (j + 64 * k)));
}

/* x (a global Vec of da) = f, written through the DMDA's own global (k, j, i, c) indexing, not the layout's */
static PetscErrorCode FillDMDAField(DM da, Vec x)
{
  PetscInt dim, dof, xs, ys, zs, xm, ym, zm;

  PetscFunctionBegin;
  PetscCall(DMDAGetInfo(da, &dim, NULL, NULL, NULL, NULL, NULL, NULL, &dof, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetCorners(da, &xs, &ys, &zs, &xm, &ym, &zm));
  if (dim == 1) {
    PetscScalar **a;

    PetscCall(DMDAVecGetArrayDOF(da, x, &a));
    for (PetscInt i = xs; i < xs + xm; i++)
      for (PetscInt c = 0; c < dof; c++) a[i][c] = FieldValue(0, 0, i, c);
    PetscCall(DMDAVecRestoreArrayDOF(da, x, &a));
  } else if (dim == 2) {
    PetscScalar ***a;

    PetscCall(DMDAVecGetArrayDOF(da, x, &a));
    for (PetscInt j = ys; j < ys + ym; j++)
      for (PetscInt i = xs; i < xs + xm; i++)
        for (PetscInt c = 0; c < dof; c++) a[j][i][c] = FieldValue(0, j, i, c);
    PetscCall(DMDAVecRestoreArrayDOF(da, x, &a));
  } else {
    PetscScalar ****a;

    PetscCall(DMDAVecGetArrayDOF(da, x, &a));
    for (PetscInt k = zs; k < zs + zm; k++)
      for (PetscInt j = ys; j < ys + ym; j++)
        for (PetscInt i = xs; i < xs + xm; i++)
          for (PetscInt c = 0; c < dof; c++) a[k][j][i][c] = FieldValue(k, j, i, c);
    PetscCall(DMDAVecRestoreArrayDOF(da, x, &a));
  }
  PetscFunctionReturn(0);
}

/*
  A DMDA of dimension dim with dof, its ownership either explicit and uneven (the ranks factorised over the axes,
  starting from x when dof = 1 and from the slowest axis otherwise; per-rank widths 2 to 5) or PETSC_DECIDE
  (7 x 6 x 5 points). *uneven: some axis has ranges of different widths.
*/
static PetscErrorCode CreateDMDA(MPI_Comm comm, PetscInt dim, PetscInt dof, PetscBool given, DM *da, PetscBool *uneven)
{
  PetscMPIInt     size;
  PetscInt        q[3] = {1, 1, 1}, ext[3] = {7, 6, 5}, *l[3] = {NULL, NULL, NULL}, nprime = 0;
  const PetscInt *range[3];
  DMBoundaryType  bx = DM_BOUNDARY_NONE;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  if (given) {
    for (PetscMPIInt r = size, f = 2; r > 1; f++)
      while (r % f == 0) {
        PetscInt a = dof == 1 ? nprime % dim : dim - 1 - nprime % dim;

        q[a] *= f;
        r /= f;
        nprime++;
      }
    for (PetscInt a = 0; a < dim; a++) {
      PetscCall(PetscMalloc1(q[a], &l[a]));
      ext[a] = 0;
      for (PetscInt c = 0; c < q[a]; c++) {
        l[a][c] = 2 + (5 * c + a + dof) % 4;
        ext[a] += l[a][c];
      }
    }
  } else
    for (PetscInt a = 0; a < 3; a++) q[a] = PETSC_DECIDE;
  if (dim == 1)
    PetscCall(DMDACreate1d(comm, bx, ext[0], dof, 1, l[0], da));
  else if (dim == 2)
    PetscCall(DMDACreate2d(comm, bx, bx, DMDA_STENCIL_BOX, ext[0], ext[1], q[0], q[1], dof, 1, l[0], l[1], da));
  else
    PetscCall(DMDACreate3d(comm, bx, bx, bx, DMDA_STENCIL_BOX, ext[0], ext[1], ext[2], q[0], q[1], q[2], dof, 1, l[0], l[1], l[2], da));
  PetscCall(DMSetUp(*da));
  for (PetscInt a = 0; a < 3; a++) PetscCall(PetscFree(l[a]));
  PetscCall(DMDAGetInfo(*da, NULL, NULL, NULL, NULL, &q[0], &q[1], &q[2], NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetOwnershipRanges(*da, &range[0], &range[1], &range[2]));
  *uneven = PETSC_FALSE;
  for (PetscInt a = 0; a < dim; a++)
    for (PetscInt c = 1; c < q[a]; c++)
      if (range[a][c] != range[a][0]) *uneven = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*
  PetNetLayoutCreateFromDMDA() on one DMDA: (a) the layout's block is the DMDA's box and a Vec of the layout has the
  local size and ownership range of the DMDA's global Vec; (b) the field f written through the DMDA's indexing and
  redistributed to the whole tensor on rank 0 is f at every (k, j, i, c), exactly, and bitwise the DMDA's natural
  ordering gathered on rank 0; (c) the dot-product test of that operator; (d) to a channel-split layout and back is
  bitwise the identity (f and random data), with its dot-product test.
*/
static PetscErrorCode CheckDMDA(MPI_Comm comm, PetscInt dim, PetscInt dof, PetscBool given, PetscRandom rnd)
{
  PetscMPIInt        rank, size;
  DM                 da;
  PetNetLayout       L, W, C;
  PetscInt64         dims[PETNET_LAYOUT_MAX_DIM], start[PETNET_LAYOUT_MAX_DIM], bsize[PETNET_LAYOUT_MAX_DIM], *sizes;
  PetscInt           ndim, corner[3], width[3], ext[3], q[3], nd, nl, lo[2], llo[2], i = 0;
  Vec                x, xl, y, natural, gathered, z;
  VecScatter         tozero;
  Mat                R, Rc, Rcinv;
  const PetscScalar *a, *b;
  PetscBool          uneven = PETSC_FALSE, same;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(CreateDMDA(comm, dim, dof, given, &da, &uneven));
  PetscCall(DMDAGetInfo(da, NULL, &ext[0], &ext[1], &ext[2], &q[0], &q[1], &q[2], NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(PetNetLayoutCreateFromDMDA(da, &L));
  ndim = dim + 2;

  /* (a) the block is the DMDA's box, in the layout's dim order (1, [z,] [y,] x, c); the Vecs agree */
  PetscCall(PetNetLayoutGetBlock(L, start, bsize));
  PetscCall(DMDAGetCorners(da, &corner[0], &corner[1], &corner[2], &width[0], &width[1], &width[2]));
  PetscCheck(start[0] == 0 && bsize[0] == 1 && start[ndim - 1] == 0 && bsize[ndim - 1] == dof, PETSC_COMM_SELF, PETSC_ERR_PLIB, "dmda: the block's sample or channel range is not [0,1) x [0,%" PetscInt_FMT ")", dof);
  for (PetscInt d = 0; d < dim; d++)
    PetscCheck(start[dim - d] == corner[d] && bsize[dim - d] == width[d], PETSC_COMM_SELF, PETSC_ERR_PLIB,
               "dmda: along DMDA axis %" PetscInt_FMT " the block is [%" PetscInt64_FMT ", +%" PetscInt64_FMT "), the DMDA box [%" PetscInt_FMT ", +%" PetscInt_FMT ")", d, start[dim - d], bsize[dim - d], corner[d], width[d]);
  PetscCall(DMCreateGlobalVector(da, &x));
  PetscCall(PetNetLayoutCreateVec(L, &xl));
  PetscCall(VecGetLocalSize(x, &nd));
  PetscCall(VecGetLocalSize(xl, &nl));
  PetscCall(VecGetOwnershipRange(x, &lo[0], &lo[1]));
  PetscCall(VecGetOwnershipRange(xl, &llo[0], &llo[1]));
  PetscCheck(nd == nl && lo[0] == llo[0] && lo[1] == llo[1], PETSC_COMM_SELF, PETSC_ERR_PLIB,
             "dmda: the DMDA Vec owns [%" PetscInt_FMT ", %" PetscInt_FMT ") (%" PetscInt_FMT " entries), the layout's Vec [%" PetscInt_FMT ", %" PetscInt_FMT ") (%" PetscInt_FMT ")", lo[0], lo[1], nd, llo[0], llo[1], nl);
  PetscCall(VecDestroy(&xl));

  /* (b) to the whole tensor on rank 0: dim 1 split along the 1-D grid with every entry at coordinate 0 */
  PetscCall(PetNetLayoutCreate(comm, &W));
  for (PetscInt d = 0; d < ndim; d++) dims[d] = d == 0 ? 1 : d == ndim - 1 ? dof : ext[dim - d];
  PetscCall(PetNetLayoutSetShape(W, ndim, dims));
  PetscCall(PetscCalloc1(size, &sizes));
  sizes[0] = dims[1];
  PetscCall(PetNetLayoutSetSplit(W, 1, 0, sizes));
  PetscCall(PetscFree(sizes));
  PetscCall(PetNetLayoutSetUp(W));
  PetscCall(PetNetRedistributeCreate(L, W, &R));
  PetscCall(MatCreateVecs(R, NULL, &y));
  PetscCall(FillDMDAField(da, x));
  PetscCall(VecSet(y, 42.0));
  PetscCall(MatMult(R, x, y));
  PetscCall(VecGetLocalSize(y, &nl));
  PetscCheck(nl == (rank ? 0 : BoxSize(ndim, dims)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "dmda: rank %d holds %" PetscInt_FMT " entries of the whole tensor", rank, nl);
  PetscCall(VecGetArrayRead(y, &a));
  if (!rank)
    for (PetscInt k = 0; k < (dim == 3 ? ext[2] : 1); k++)
      for (PetscInt j = 0; j < (dim >= 2 ? ext[1] : 1); j++)
        for (PetscInt ii = 0; ii < ext[0]; ii++)
          for (PetscInt c = 0; c < dof; c++, i++)
            PetscCheck(a[i] == FieldValue(k, j, ii, c), PETSC_COMM_SELF, PETSC_ERR_PLIB, "dmda: entry (k, j, i, c) = (%" PetscInt_FMT ", %" PetscInt_FMT ", %" PetscInt_FMT ", %" PetscInt_FMT ") on rank 0 is %g, expected %g", k, j, ii, c,
                       (double)PetscRealPart(a[i]), (double)PetscRealPart(FieldValue(k, j, ii, c)));
  /* ... and bitwise the DMDA's own natural ordering gathered on rank 0 */
  PetscCall(DMDACreateNaturalVector(da, &natural));
  PetscCall(DMDAGlobalToNaturalBegin(da, x, INSERT_VALUES, natural));
  PetscCall(DMDAGlobalToNaturalEnd(da, x, INSERT_VALUES, natural));
  PetscCall(VecScatterCreateToZero(natural, &tozero, &gathered));
  PetscCall(VecScatterBegin(tozero, natural, gathered, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(tozero, natural, gathered, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecGetArrayRead(gathered, &b));
  same = PETSC_TRUE;
  if (!rank) PetscCall(PetscArraycmp(a, b, nl, &same));
  PetscCheck(same, PETSC_COMM_SELF, PETSC_ERR_PLIB, "dmda: the whole tensor on rank 0 is not the DMDA's natural ordering");
  PetscCall(VecRestoreArrayRead(gathered, &b));
  PetscCall(VecRestoreArrayRead(y, &a));
  PetscCall(VecScatterDestroy(&tozero));
  PetscCall(VecDestroy(&gathered));
  PetscCall(VecDestroy(&natural));

  /* (c) */
  PetscCall(DotTest("dmda -> rank 0", R, rnd));

  /* (d) to the channels split (with y on a second axis when the rank count is even) and back */
  PetscCall(PetNetLayoutCreate(comm, &C));
  PetscCall(PetNetLayoutSetShape(C, ndim, dims));
  if (size % 2 == 0 && size > 2) {
    PetscMPIInt g[2] = {2, size / 2};

    PetscCall(PetNetLayoutSetGrid(C, 2, g));
    PetscCall(PetNetLayoutSetSplit(C, 1, 1, NULL));
  }
  PetscCall(PetNetLayoutSetSplit(C, ndim - 1, 0, NULL));
  PetscCall(PetNetLayoutSetUp(C));
  PetscCall(PetNetRedistributeCreate(L, C, &Rc));
  PetscCall(PetNetRedistributeCreate(C, L, &Rcinv));
  PetscCall(MatCreateVecs(Rc, NULL, &xl));
  PetscCall(VecDuplicate(x, &z));
  for (PetscInt t = 0; t < 2; t++) {
    if (t) PetscCall(VecSetRandom(x, rnd));
    PetscCall(VecSet(z, 42.0));
    PetscCall(MatMult(Rc, x, xl));
    PetscCall(MatMult(Rcinv, xl, z));
    PetscCall(VecEqual(x, z, &same));
    PetscCheck(same, comm, PETSC_ERR_PLIB, "dmda: DMDA layout -> channel split -> back differs from the identity (%s data)", t ? "random" : "the field f");
  }
  PetscCall(DotTest("dmda -> channels", Rc, rnd));

  PetscCall(PetscPrintf(comm, "%" PetscInt_FMT "-D DMDA %" PetscInt_FMT, dim, ext[0]));
  for (PetscInt d = 1; d < dim; d++) PetscCall(PetscPrintf(comm, "x%" PetscInt_FMT, ext[d]));
  PetscCall(PetscPrintf(comm, " dof %" PetscInt_FMT " on %" PetscInt_FMT, dof, q[0]));
  for (PetscInt d = 1; d < dim; d++) PetscCall(PetscPrintf(comm, "x%" PetscInt_FMT, q[d]));
  PetscCall(PetscPrintf(comm, " ranks (%s, %s ownership): local sizes, the field on rank 0, the natural ordering, the round trip exact\n", given ? "lx/ly/lz" : "PETSC_DECIDE", uneven ? "uneven" : "even"));
  PetscCall(MatDestroy(&R));
  PetscCall(MatDestroy(&Rc));
  PetscCall(MatDestroy(&Rcinv));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&xl));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&z));
  PetscCall(PetNetLayoutDestroy(&L));
  PetscCall(PetNetLayoutDestroy(&W));
  PetscCall(PetNetLayoutDestroy(&C));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* -case dmda: every DMDA of CheckDMDA() (1-D, 2-D, 3-D; dof 1 and 3; lx/ly/lz and PETSC_DECIDE) */
static PetscErrorCode DMDACase(MPI_Comm comm, PetscRandom rnd)
{
  PetscFunctionBegin;
  for (PetscInt dim = 1; dim <= 3; dim++)
    for (PetscInt dof = 1; dof <= 3; dof += 2)
      for (PetscInt given = 1; given >= 0; given--) PetscCall(CheckDMDA(comm, dim, dof, (PetscBool)given, rnd));
  PetscCall(PetscPrintf(comm, "%" PetscInt_FMT " dot-product tests, worst ratio %.3g (bound 1e-13)\n", ndottests, (double)worst));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscRandom rnd;
  PetscInt    ntrials = 25, seed = 7;
  PetscMPIInt size;
  char        name[64] = "";
  PetscBool   hascase, dmda;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-ntrials", &ntrials, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-seed", &seed, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", name, sizeof(name), &hascase));
  rng_state += (unsigned long long)seed * 0x9E3779B97F4A7C15ULL;
  PetscCall(PetscStrcmp(name, "dmda", &dmda));
  if (hascase && !dmda) {
    PetscBool view;

    PetscCall(PetscStrcmp(name, "view", &view));
    if (view)
      PetscCall(ViewCase(PETSC_COMM_WORLD));
    else
      PetscCall(ErrorCase(PETSC_COMM_WORLD, name));
    PetscCall(PetscFinalize());
    return 0;
  }
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, (unsigned long)seed));
  PetscCall(PetscRandomSeed(rnd));
  if (dmda) {
    PetscCall(DMDACase(PETSC_COMM_WORLD, rnd));
    PetscCall(PetscRandomDestroy(&rnd));
    PetscCall(PetscFinalize());
    return 0;
  }
  for (PetscInt t = 0; t < ntrials; t++) PetscCall(Trial(PETSC_COMM_WORLD, rnd));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " random layout pairs on %d ranks: %" PetscInt_FMT " dot-product tests, worst ratio %.3g (bound 1e-13); values, inverses, sums and halos exact\n", ntrials, size, ndottests, (double)worst));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " layouts: %" PetscInt_FMT " replicated, %" PetscInt_FMT " uneven, %" PetscInt_FMT " with an empty block, %" PetscInt_FMT " on a grid with 2+ axes of 2+ ranks\n", nlayouts, nreplicated,
                        nuneven, nemptyblock, nmultiaxis));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFinalize());
  return 0;
}
