static const char help[] = "PetNetLayout and the data-movement operators (PetNetRedistributeCreate, PetNetSumReduceCreate,\n"
                           "PetNetAllReduceCreate, PetNetHaloCreate, PetNetHaloCreateConv) over random pairs of layouts: random grids\n"
                           "factorising the communicator size, random uneven splits with empty blocks, random replication axes,\n"
                           "ndim 2..5. Asserts: the dot-product test |<Ax,y> - <x,A^T y>| <= 1e-13 |Ax||y| for every operator;\n"
                           "MatMultAdd/MatMultTransposeAdd agree with MatMult/MatMultTranspose; redistribution moves every entry to\n"
                           "where the layout says (values checked exactly, never read from a non-canonical replica); redistribution\n"
                           "followed by its inverse is bitwise the identity; sum-reduce and all-reduce equal direct sums exactly;\n"
                           "every halo box entry is the global tensor's value or 0 for padding.\n"
                           "Options: -ntrials N (default 25), -seed S, -case NAME (an error case, or view).\n";

#include <petnet.h>

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

int main(int argc, char **argv)
{
  PetscRandom rnd;
  PetscInt    ntrials = 25, seed = 7;
  PetscMPIInt size;
  char        name[64] = "";
  PetscBool   hascase;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-ntrials", &ntrials, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-seed", &seed, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", name, sizeof(name), &hascase));
  rng_state += (unsigned long long)seed * 0x9E3779B97F4A7C15ULL;
  if (hascase) {
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
  for (PetscInt t = 0; t < ntrials; t++) PetscCall(Trial(PETSC_COMM_WORLD, rnd));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " random layout pairs on %d ranks: %" PetscInt_FMT " dot-product tests, worst ratio %.3g (bound 1e-13); values, inverses, sums and halos exact\n", ntrials, size, ndottests, (double)worst));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " layouts: %" PetscInt_FMT " replicated, %" PetscInt_FMT " uneven, %" PetscInt_FMT " with an empty block, %" PetscInt_FMT " on a grid with 2+ axes of 2+ ranks\n", nlayouts, nreplicated,
                        nuneven, nemptyblock, nmultiaxis));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFinalize());
  return 0;
}
