static const char help[] = "The tensor-shape kinds (reshape, permute, einsum) against direct reference loops, on one rank's arrays:\n"
                           "  einsum: for each spec of a table (one and two operands; permutations, sums, broadcasts, batched matrix\n"
                           "    products with and without permuted operands, outer and elementwise products), at -einsum_path gemm and\n"
                           "    loop: forward, both input cotangents and the jvp (both tangents, and each alone) against a naive loop over\n"
                           "    every letter (relative 1e-13), and that the view names the path the case means to exercise; the float\n"
                           "    passes (the kind's float kernels, one and two operands) against double within 1e-5 relative;\n"
                           "  permute: random permutations of random shapes of 1 to 5 dims, double and float: the same bits as a naive\n"
                           "    gather, and the permutation followed by its inverse is the identity bit for bit;\n"
                           "  reshape: the -1 inferred, the values the same bits;\n"
                           "  threads: permute and einsum (GEMM and loop paths, forward and cotangents) the same bits at -net_threads 1\n"
                           "    and 2, on batches large enough for several parts;\n"
                           "  -error NAME: the refusal under test (the tensorops_*_error tests).\n";

#include <petnet.h>
#include "testutil.h"

#define MAXL 16

typedef struct {
  const char *spec;     /* the einsum spec */
  const char *shape[2]; /* the inputs' shapes (the second NULL: one operand) */
  const char *gemmview; /* what the view says at -einsum_path gemm ("forward GEMM", "permutation", ...) */
} EinsumCase;

static const EinsumCase cases[] = {
    {"tij->jti", {"3x4x5", NULL}, "forward permutation"},
    {"ij->i", {"4x5", NULL}, "forward loop"},
    {"ij->j", {"4x5", NULL}, "forward loop"},
    {"ijk->", {"2x3x4", NULL}, "forward loop"},
    {"ij->ji", {"1x7", NULL}, "forward permutation"},
    {"bqd,bkd->bqk", {"3x4x5", "3x6x5"}, "forward GEMM"},
    {"thd->htd", {"4x2x3", NULL}, "forward permutation"},
    {"ij,jk->ik", {"4x5", "5x3"}, "forward GEMM"},
    {"ij,kj->ki", {"4x5", "3x5"}, "forward GEMM"},
    {"jb,bkj->kb", {"5x3", "3x4x5"}, "forward GEMM"},
    {"i,j->ij", {"4", "5"}, "forward GEMM"},
    {"i,i->", {"6", "6"}, "forward GEMM"},
    {"ij,j->ij", {"4x5", "5"}, "forward GEMM"}, /* forced: j a batch letter, I = 4, J = K = 1 (auto takes the loop) */
    {"ij,jk->i", {"3x4", "4x5"}, "forward loop"},
    {"abcde,ec->bda", {"2x2x3x2x4", "4x3"}, "forward GEMM"},
};

static PetscErrorCode FillRandom(PetscRandom rnd, PetscInt n, PetscScalar a[])
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < n; i++) PetscCall(PetscRandomGetValue(rnd, &a[i]));
  PetscFunctionReturn(0);
}

/* The letters of spec and their sizes from the shapes; the terms' letters in t[0], t[1] and the output's in t[2] */
static PetscErrorCode ParseSpec(const char spec[], const PetNetShape in[], PetscInt nin, char t[3][8], PetscInt size[128])
{
  const char *arrow = strstr(spec, "->"), *comma = strchr(spec, ',');

  PetscFunctionBegin;
  PetscCall(PetscMemzero(t, sizeof(char[3][8])));
  memcpy(t[0], spec, (size_t)((comma ? comma : arrow) - spec));
  if (comma) memcpy(t[1], comma + 1, (size_t)(arrow - comma - 1));
  PetscCall(PetscStrcpy(t[2], arrow + 2));
  for (PetscInt k = 0; k < nin; k++)
    for (PetscInt d = 0; d < in[k].ndim; d++) size[(unsigned char)t[k][d]] = in[k].dim[d];
  PetscFunctionReturn(0);
}

/* the offset of the current letter values idx[] in term s (row-major) */
static PetscInt Offset(const char s[], const PetscInt size[], const PetscInt idx[])
{
  PetscInt off = 0;

  for (const char *c = s; *c; c++) off = off * size[(unsigned char)*c] + idx[(unsigned char)*c];
  return off;
}

/*
  The reference: for every value of every letter (an odometer over all of them), per sample,
    out[o] += scale * A[a] B[b]       (B NULL: a factor 1)
  with the terms named ta, tb, to. out is zeroed first. Nothing of the library is used.
*/
static void Reference(PetscInt n, const char ta[], const char tb[], const char to[], const PetscInt size[], const PetscScalar *A, const PetscScalar *B, PetscScalar *out)
{
  char     letters[MAXL] = "";
  PetscInt nl = 0, idx[128] = {0}, sa = 1, sb = 1, so = 1;

  for (const char *terms[3] = {ta, tb, to}, **t = terms; t < terms + 3; t++)
    for (const char *c = *t; c && *c; c++)
      if (!strchr(letters, *c)) letters[nl++] = *c;
  for (const char *c = ta; *c; c++) sa *= size[(unsigned char)*c];
  for (const char *c = tb; tb && *c; c++) sb *= size[(unsigned char)*c];
  for (const char *c = to; *c; c++) so *= size[(unsigned char)*c];
  for (PetscInt i = 0; i < n * so; i++) out[i] = 0;
  for (PetscInt s = 0; s < n; s++) {
    PetscBool done = PETSC_FALSE;

    for (PetscInt l = 0; l < nl; l++) idx[(unsigned char)letters[l]] = 0;
    while (!done) {
      out[s * so + Offset(to, size, idx)] += A[s * sa + Offset(ta, size, idx)] * (B ? B[s * sb + Offset(tb, size, idx)] : 1.0);
      done = PETSC_TRUE;
      for (PetscInt l = nl - 1; l >= 0; l--) {
        const unsigned char L = (unsigned char)letters[l];

        if (++idx[L] < size[L]) {
          done = PETSC_FALSE;
          break;
        }
        idx[L] = 0;
      }
    }
  }
}

static PetscReal MaxRelDiff(PetscInt N, const PetscScalar a[], const PetscScalar b[])
{
  PetscReal d = 0, m = 0;

  for (PetscInt i = 0; i < N; i++) {
    d = PetscMax(d, PetscAbsScalar(a[i] - b[i]));
    m = PetscMax(m, PetscAbsScalar(b[i]));
  }
  return d / PetscMax(m, PETSC_SMALL);
}

static PetscErrorCode CreateEinsum(const EinsumCase *c, const char path[], PetscInt *nin, PetNetShape in[], Layer *layer)
{
  PetscOptions options;
  char         opt[64];

  PetscFunctionBegin;
  *nin = c->shape[1] ? 2 : 1;
  for (PetscInt k = 0; k < *nin; k++) PetscCall(PetNetShapeFromString(c->shape[k], &in[k]));
  PetscCall(LayerCreate(PETSC_COMM_SELF, layer));
  PetscCall(LayerSetType(*layer, LAYEREINSUM));
  PetscCall(LayerSetArguments(*layer, c->spec));
  PetscCall(PetscOptionsCreate(&options));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-einsum_path %s", path));
  PetscCall(PetscOptionsInsertString(options, opt));
  PetscCall(PetscObjectSetOptions((PetscObject)*layer, options));
  PetscCall(LayerSetFromOptions(*layer));
  PetscCall(LayerSetInputShapes(*layer, *nin, in));
  PetscCall(LayerSetUp(*layer));
  PetscCall(PetscOptionsDestroy(&options));
  PetscFunctionReturn(0);
}

/* float copies of N doubles, and doubles of N floats */
static void ToFloat(PetscInt N, const PetscScalar *d, float *f)
{
  for (PetscInt i = 0; i < N; i++) f[i] = (float)d[i];
}

static void ToDouble(PetscInt N, const float *f, PetscScalar *d)
{
  for (PetscInt i = 0; i < N; i++) d[i] = f[i];
}

/*
  The float passes (LayerForwardSingle(), LayerBackwardSingle(), LayerJVPSingle(): the kind's float kernels for one and
  two operands, their GEMMs on sgemm) against the double ones on the same float-rounded inputs: within 1e-5 relative
  (each entry a sum of at most a few dozen float products)
*/
static PetscErrorCode TestEinsumSingle(Layer layer, const char spec[], const char path[], PetscInt n, PetscInt nin, const PetscInt insize[], PetscInt outsize, PetscScalar *const x[], PetscScalar *const xd[], const PetscScalar *dy)
{
  float       *xf[2] = {NULL, NULL}, *xdf[2] = {NULL, NULL}, *dxf[2] = {NULL, NULL}, *yf, *dyf;
  PetscScalar *xr[2] = {NULL, NULL}, *xdr[2] = {NULL, NULL}, *dxd[2] = {NULL, NULL}, *dxs[2] = {NULL, NULL}, *yd, *ys, *dyr;
  PetscReal    e = 0;
  PetscBool    has;

  PetscFunctionBegin;
  PetscCall(LayerHasSingle(layer, &has));
  PetscCheck(has, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s: LayerHasSingle() says the kind has no float kernels for %" PetscInt_FMT " input(s)", spec, nin);
  for (PetscInt k = 0; k < nin; k++) { /* the inputs rounded to float, and their exact double values */
    PetscCall(PetscMalloc4(n * insize[k], &xf[k], n * insize[k], &xdf[k], n * insize[k], &dxf[k], n * insize[k], &xr[k]));
    PetscCall(PetscMalloc3(n * insize[k], &xdr[k], n * insize[k], &dxd[k], n * insize[k], &dxs[k]));
    ToFloat(n * insize[k], x[k], xf[k]);
    ToFloat(n * insize[k], xd[k], xdf[k]);
    ToDouble(n * insize[k], xf[k], xr[k]);
    ToDouble(n * insize[k], xdf[k], xdr[k]);
  }
  PetscCall(PetscMalloc5(n * outsize, &yf, n * outsize, &dyf, n * outsize, &yd, n * outsize, &ys, n * outsize, &dyr));
  ToFloat(n * outsize, dy, dyf);
  ToDouble(n * outsize, dyf, dyr);
  /* forward */
  PetscCall(LayerForwardArrays(layer, n, NULL, (const PetscScalar *const *)xr, yd));
  PetscCall(LayerForwardSingle(layer, n, NULL, (const float *const *)xf, yf));
  ToDouble(n * outsize, yf, ys);
  e = PetscMax(e, MaxRelDiff(n * outsize, ys, yd));
  PetscCheck(e <= 1e-5, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s (%s): the float forward differs from double by %g (relative)", spec, path, (double)e);
  /* cotangents */
  PetscCall(LayerBackwardArrays(layer, n, NULL, (const PetscScalar *const *)xr, yd, dyr, dxd, NULL));
  PetscCall(LayerBackwardSingle(layer, n, NULL, (const float *const *)xf, yf, dyf, dxf, NULL));
  for (PetscInt k = 0; k < nin; k++) {
    ToDouble(n * insize[k], dxf[k], dxs[k]);
    e = PetscMax(e, MaxRelDiff(n * insize[k], dxs[k], dxd[k]));
    PetscCheck(e <= 1e-5, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s (%s): the float cotangent of input %" PetscInt_FMT " differs from double by %g (relative)", spec, path, k + 1, (double)e);
  }
  /* jvp, with both tangents and with each alone (the product rule's two terms) */
  for (PetscInt which = 0; which < (nin == 2 ? 3 : 1); which++) {
    const PetscScalar *tan[2]  = {which != 2 ? xdr[0] : NULL, nin == 2 && which != 1 ? xdr[1] : NULL};
    const float       *tanf[2] = {which != 2 ? xdf[0] : NULL, nin == 2 && which != 1 ? xdf[1] : NULL};

    PetscCall(LayerJVPArrays(layer, n, NULL, (const PetscScalar *const *)xr, yd, tan, NULL, dyr));
    PetscCall(LayerJVPSingle(layer, n, NULL, (const float *const *)xf, yf, tanf, NULL, dyf));
    ToDouble(n * outsize, dyf, ys);
    e = PetscMax(e, MaxRelDiff(n * outsize, ys, dyr));
    PetscCheck(e <= 1e-5, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s (%s): the float jvp (tangents %s) differs from double by %g (relative)", spec, path, which == 0 ? "of all inputs" : which == 1 ? "of input 1" : "of input 2", (double)e);
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "einsum %-14s %-4s float forward, cotangents, jvp against double: max relative difference %s\n", spec, path, e <= 1e-6 ? "<= 1e-6" : "<= 1e-5"));
  for (PetscInt k = 0; k < nin; k++) {
    PetscCall(PetscFree4(xf[k], xdf[k], dxf[k], xr[k]));
    PetscCall(PetscFree3(xdr[k], dxd[k], dxs[k]));
  }
  PetscCall(PetscFree5(yf, dyf, yd, ys, dyr));
  PetscFunctionReturn(0);
}

/* One case at one path: forward, cotangents and jvp against the reference loops */
static PetscErrorCode TestEinsumCase(const EinsumCase *c, const char path[], PetscRandom rnd, PetscReal *worst)
{
  const PetscInt n = 3;
  Layer          layer;
  PetNetShape    in[2], out;
  PetscInt       nin, insize[2] = {0, 0}, outsize, size[128] = {0};
  char           t[3][8];
  PetscScalar   *x[2] = {NULL, NULL}, *dx[2] = {NULL, NULL}, *dxr[2] = {NULL, NULL}, *xd[2] = {NULL, NULL}, *y, *yr, *dy, *tmp;
  PetscReal      e     = 0;
  PetscBool      found = PETSC_FALSE;

  PetscFunctionBegin;
  PetscCall(CreateEinsum(c, path, &nin, in, &layer));
  if (!strcmp(path, "gemm")) {
    PetscCall(TestLayerViewContains(layer, c->gemmview, &found));
    PetscCheck(found, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s at -einsum_path gemm: the view does not say \"%s\" (the case does not test the path it means to)", c->spec, c->gemmview);
  } else {
    PetscCall(TestLayerViewContains(layer, c->shape[1] ? "forward loop" : "forward", &found));
    PetscCheck(found, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s at -einsum_path loop: the view does not say \"forward loop\"", c->spec);
  }
  PetscCall(LayerGetOutputShape(layer, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(ParseSpec(c->spec, in, nin, t, size));
  for (PetscInt k = 0; k < nin; k++) {
    PetscCall(PetNetShapeSize(&in[k], &insize[k]));
    PetscCall(PetscMalloc4(n * insize[k], &x[k], n * insize[k], &dx[k], n * insize[k], &dxr[k], n * insize[k], &xd[k]));
    PetscCall(FillRandom(rnd, n * insize[k], x[k]));
    PetscCall(FillRandom(rnd, n * insize[k], xd[k]));
  }
  PetscCall(PetscMalloc4(n * outsize, &y, n * outsize, &yr, n * outsize, &dy, n * outsize, &tmp));
  PetscCall(FillRandom(rnd, n * outsize, dy));

  /* forward */
  PetscCall(LayerForwardArrays(layer, n, NULL, (const PetscScalar *const *)x, y));
  Reference(n, t[0], nin == 2 ? t[1] : NULL, t[2], size, x[0], nin == 2 ? x[1] : NULL, yr);
  e = PetscMax(e, MaxRelDiff(n * outsize, y, yr));
  PetscCheck(e <= 1e-13, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s (%s): forward differs from the reference loop by %g (relative)", c->spec, path, (double)e);
  /* cotangents: dA = sum dY B over the letters not in A, dB = sum dY A */
  PetscCall(LayerBackwardArrays(layer, n, NULL, (const PetscScalar *const *)x, y, dy, dx, NULL));
  for (PetscInt k = 0; k < nin; k++) {
    Reference(n, t[2], nin == 2 ? t[1 - k] : NULL, t[k], size, dy, nin == 2 ? x[1 - k] : NULL, dxr[k]);
    e = PetscMax(e, MaxRelDiff(n * insize[k], dx[k], dxr[k]));
    PetscCheck(e <= 1e-13, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s (%s): the cotangent of input %" PetscInt_FMT " differs from the reference loop by %g (relative)", c->spec, path, k + 1, (double)e);
  }
  /* jvp: dY = E(dA, B) + E(A, dB), with both tangents and with each alone */
  for (PetscInt which = 0; which < (nin == 2 ? 3 : 1); which++) {
    const PetscScalar *tan[2] = {which != 2 ? xd[0] : NULL, nin == 2 && which != 1 ? xd[1] : NULL};

    PetscCall(LayerJVPArrays(layer, n, NULL, (const PetscScalar *const *)x, y, tan, NULL, y));
    for (PetscInt i = 0; i < n * outsize; i++) yr[i] = 0;
    if (tan[0]) Reference(n, t[0], nin == 2 ? t[1] : NULL, t[2], size, tan[0], nin == 2 ? x[1] : NULL, yr);
    if (tan[1]) {
      Reference(n, t[0], t[1], t[2], size, x[0], tan[1], tmp);
      for (PetscInt i = 0; i < n * outsize; i++) yr[i] += tmp[i];
    }
    e = PetscMax(e, MaxRelDiff(n * outsize, y, yr));
    PetscCheck(e <= 1e-13, PETSC_COMM_SELF, PETSC_ERR_PLIB, "einsum:%s (%s): the jvp (tangents %s) differs from the reference loop by %g (relative)", c->spec, path, which == 0 ? "of all inputs" : which == 1 ? "of input 1" : "of input 2", (double)e);
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "einsum %-14s %-4s forward, cotangents, jvp against the reference loop: max relative difference %s\n", c->spec, path, e <= 1e-15 ? "<= 1e-15" : "<= 1e-13"));
  *worst = PetscMax(*worst, e);
  PetscCall(TestEinsumSingle(layer, c->spec, path, n, nin, insize, outsize, x, xd, dy));
  for (PetscInt k = 0; k < nin; k++) PetscCall(PetscFree4(x[k], dx[k], dxr[k], xd[k]));
  PetscCall(PetscFree4(y, yr, dy, tmp));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/* the permutation of x [n][dims] by perm through the layer, in double and in float; checked against a naive gather and
   its inverse permutation bit for bit */
static PetscErrorCode TestPermute(PetscRandom rnd, PetscInt r, const PetscInt dims[], const PetscInt perm[])
{
  const PetscInt n = 2;
  Layer          layer;
  PetNetShape    in = {r, {0}};
  PetscInt       N  = 1, xs[PETNET_MAX_DIM], ys[PETNET_MAX_DIM], od[PETNET_MAX_DIM];
  PetscScalar   *x, *y, *yr, *back;
  float         *xf, *yf, *backf;
  char           args[64] = "", text[64] = "";

  PetscFunctionBegin;
  for (PetscInt d = 0; d < r; d++) {
    in.dim[d] = dims[d];
    N *= dims[d];
    PetscCall(PetscSNPrintf(args + strlen(args), sizeof(args) - strlen(args), "%s%" PetscInt_FMT, d ? "," : "", perm[d]));
  }
  PetscCall(PetNetShapeToString(&in, sizeof(text), text));
  PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
  PetscCall(LayerSetType(layer, LAYERPERMUTE));
  PetscCall(LayerSetArguments(layer, args));
  PetscCall(LayerSetInputShape(layer, &in));
  PetscCall(LayerSetUp(layer));
  PetscCall(PetscMalloc4(n * N, &x, n * N, &y, n * N, &yr, n * N, &back));
  PetscCall(PetscMalloc3(n * N, &xf, n * N, &yf, n * N, &backf));
  PetscCall(FillRandom(rnd, n * N, x));
  for (PetscInt i = 0; i < n * N; i++) xf[i] = (float)x[i];
  /* the naive gather: y[i] = x[j], j[perm[d]] = i[d] */
  for (PetscInt d = r - 1, s = 1; d >= 0; d--) {
    xs[d] = s;
    s *= dims[d];
  }
  for (PetscInt d = r - 1, s = 1; d >= 0; d--) {
    od[d] = dims[perm[d]];
    ys[d] = s;
    s *= od[d];
  }
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt i = 0; i < N; i++) {
      PetscInt off = 0;

      for (PetscInt d = 0; d < r; d++) off += ((i / ys[d]) % od[d]) * xs[perm[d]];
      yr[s * N + i] = x[s * N + off];
    }
  PetscCall(LayerForwardArray(layer, n, NULL, x, y));
  PetscCheck(!memcmp(y, yr, sizeof(PetscScalar) * n * N), PETSC_COMM_SELF, PETSC_ERR_PLIB, "permute(%s) of %s: the forward pass differs from the naive gather", args, text);
  PetscCall(LayerBackwardArray(layer, n, NULL, x, y, y, back, NULL)); /* the inverse permutation */
  PetscCheck(!memcmp(back, x, sizeof(PetscScalar) * n * N), PETSC_COMM_SELF, PETSC_ERR_PLIB, "permute(%s) of %s followed by its inverse is not the identity bit for bit", args, text);
  PetscCall(LayerJVPArray(layer, n, NULL, x, y, x, NULL, back));
  PetscCheck(!memcmp(back, yr, sizeof(PetscScalar) * n * N), PETSC_COMM_SELF, PETSC_ERR_PLIB, "permute(%s) of %s: the jvp differs from the forward pass", args, text);
  {
    const float *xfs[1] = {xf};
    float       *bfs[1] = {backf};
    const float *yfs    = yf;

    PetscCall(LayerForwardSingle(layer, n, NULL, xfs, yf));
    for (PetscInt i = 0; i < n * N; i++) PetscCheck(yf[i] == (float)yr[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "permute(%s) of %s in float: entry %" PetscInt_FMT " differs from the naive gather", args, text, i);
    PetscCall(LayerBackwardSingle(layer, n, NULL, xfs, yfs, yfs, bfs, NULL));
    PetscCheck(!memcmp(backf, xf, sizeof(float) * n * N), PETSC_COMM_SELF, PETSC_ERR_PLIB, "permute(%s) of %s in float followed by its inverse is not the identity bit for bit", args, text);
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "permute(%s) of %s: the naive gather and, after the inverse, the input, bit for bit (double and float)\n", args, text));
  PetscCall(PetscFree4(x, y, yr, back));
  PetscCall(PetscFree3(xf, yf, backf));
  PetscCall(LayerDestroy(&layer));
  PetscFunctionReturn(0);
}

/* a random permutation of r dims of random sizes (1 to 9; large: 20 to 60, so that tiles and parts matter) */
static PetscErrorCode RandomPermutation(PetscRandom rnd, PetscInt r, PetscBool large, PetscInt dims[], PetscInt perm[])
{
  PetscFunctionBegin;
  for (PetscInt d = 0; d < r; d++) {
    PetscReal u;

    PetscCall(PetscRandomGetValueReal(rnd, &u));
    dims[d] = large ? 20 + (PetscInt)(40 * (u + 1) / 2) : 1 + (PetscInt)(8.99 * (u + 1) / 2);
    perm[d] = d;
  }
  for (PetscInt d = r - 1; d > 0; d--) { /* Fisher-Yates */
    PetscReal u;
    PetscInt  j, s;

    PetscCall(PetscRandomGetValueReal(rnd, &u));
    j       = PetscMin(d, (PetscInt)((d + 1) * (u + 1) / 2));
    s       = perm[d];
    perm[d] = perm[j];
    perm[j] = s;
  }
  PetscFunctionReturn(0);
}

/* forward and every cotangent of layer (nin inputs) at 1 and 2 threads: the same bits */
static PetscErrorCode TestThreads(Layer layer, const char name[], PetscInt nin, const PetNetShape in[], PetscInt n, PetscRandom rnd)
{
  PetscInt     insize[2], outsize;
  PetNetShape  out;
  PetscScalar *x[2] = {NULL, NULL}, *dx[2][2] = {{NULL, NULL}, {NULL, NULL}}, *y[2], *dy;

  PetscFunctionBegin;
  PetscCall(LayerGetOutputShape(layer, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  for (PetscInt k = 0; k < nin; k++) {
    PetscCall(PetNetShapeSize(&in[k], &insize[k]));
    PetscCall(PetscMalloc3(n * insize[k], &x[k], n * insize[k], &dx[0][k], n * insize[k], &dx[1][k]));
    PetscCall(FillRandom(rnd, n * insize[k], x[k]));
  }
  PetscCall(PetscMalloc3(n * outsize, &y[0], n * outsize, &y[1], n * outsize, &dy));
  PetscCall(FillRandom(rnd, n * outsize, dy));
  for (int t = 0; t < 2; t++) {
    PetscCall(PetNetSetNumThreads(t + 1));
    PetscCall(LayerForwardArrays(layer, n, NULL, (const PetscScalar *const *)x, y[t]));
    PetscCall(LayerBackwardArrays(layer, n, NULL, (const PetscScalar *const *)x, y[t], dy, dx[t], NULL));
  }
  PetscCall(PetNetSetNumThreads(1));
  PetscCheck(!memcmp(y[0], y[1], sizeof(PetscScalar) * n * outsize), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: forward differs between 1 and 2 threads", name);
  for (PetscInt k = 0; k < nin; k++) PetscCheck(!memcmp(dx[0][k], dx[1][k], sizeof(PetscScalar) * n * insize[k]), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the cotangent of input %" PetscInt_FMT " differs between 1 and 2 threads", name, k + 1);
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "%-40s %3" PetscInt_FMT " samples: forward and cotangents the same bits at 1 and 2 threads\n", name, n));
  for (PetscInt k = 0; k < nin; k++) PetscCall(PetscFree3(x[k], dx[0][k], dx[1][k]));
  PetscCall(PetscFree3(y[0], y[1], dy));
  PetscFunctionReturn(0);
}

/* The kinds' refusals (tests tensorops_*_error): each makes a layer the way a Net would and sets it up */
static PetscErrorCode TestError(const char error[])
{
  struct {
    const char *name, *kind, *args, *shape[2];
  } errs[] = {
      {"reshape_product", "reshape", "4x5", {"3x8", NULL}},   {"reshape_two_infer", "reshape", "-1x4x-1", {"3x8", NULL}}, {"reshape_infer", "reshape", "5x-1", {"3x8", NULL}},   {"permute_repeat", "permute", "0,0,1", {"2x3x4", NULL}},
      {"permute_range", "permute", "0,3,1", {"2x3x4", NULL}}, {"permute_length", "permute", "1,0", {"2x3x4", NULL}},      {"einsum_unknown", "einsum", "ij->ik", {"3x4", NULL}}, {"einsum_repeat", "einsum", "ii->i", {"3x3", NULL}},
      {"einsum_size", "einsum", "ij,jk->ik", {"3x4", "5x6"}}, {"einsum_operands", "einsum", "ij,jk->ik", {"3x4", NULL}},  {"einsum_arrow", "einsum", "ij,jk", {"3x4", "4x5"}},   {"einsum_rank", "einsum", "ijk->ik", {"3x4", NULL}},
  };
  Layer       layer;
  PetNetShape in[2];

  PetscFunctionBegin;
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(errs); i++) {
    PetscInt nin = errs[i].shape[1] ? 2 : 1;

    if (strcmp(error, errs[i].name)) continue;
    for (PetscInt k = 0; k < nin; k++) PetscCall(PetNetShapeFromString(errs[i].shape[k], &in[k]));
    PetscCall(LayerCreate(PETSC_COMM_WORLD, &layer));
    PetscCall(PetscObjectSetName((PetscObject)layer, "mix"));
    PetscCall(LayerSetType(layer, errs[i].kind));
    PetscCall(LayerSetArguments(layer, errs[i].args));
    PetscCall(LayerSetInputShapes(layer, nin, in));
    PetscCall(LayerSetUp(layer));
    PetscCall(LayerDestroy(&layer));
  }
  SETERRQ(PETSC_COMM_WORLD, PETSC_ERR_PLIB, "-error %s: no such case, or it was not refused", error);
}

int main(int argc, char **argv)
{
  PetscRandom rnd;
  PetscReal   worst     = 0;
  char        error[64] = "";

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error", error, sizeof(error), NULL));
  if (error[0]) PetscCall(TestError(error));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 23));
  PetscCall(PetscRandomSeed(rnd));

  /* einsum: both paths against the reference */
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(cases); i++) {
    PetscCall(TestEinsumCase(&cases[i], "gemm", rnd, &worst));
    PetscCall(TestEinsumCase(&cases[i], "loop", rnd, &worst));
  }

  /* permute: random permutations of 1 to 5 dims, small and (3 dims) large */
  for (PetscInt r = 1; r <= PETNET_MAX_DIM; r++)
    for (int rep = 0; rep < 3; rep++) {
      PetscInt dims[PETNET_MAX_DIM], perm[PETNET_MAX_DIM];

      PetscCall(RandomPermutation(rnd, r, PETSC_FALSE, dims, perm));
      PetscCall(TestPermute(rnd, r, dims, perm));
    }
  {
    PetscInt dims[3], perm[3], tiled[3] = {2, 0, 1}; /* the input's last dim moves: tiles of both, partial at the edges */

    PetscCall(RandomPermutation(rnd, 3, PETSC_TRUE, dims, perm));
    PetscCall(TestPermute(rnd, 3, dims, tiled));
  }

  /* reshape: the -1 inferred, the values unchanged */
  {
    Layer       layer;
    PetNetShape in = {2, {6, 4}}, out;
    PetscScalar x[2 * 24], y[2 * 24];
    char        text[64];

    PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
    PetscCall(LayerSetType(layer, LAYERRESHAPE));
    PetscCall(LayerSetArguments(layer, "2x-1x3"));
    PetscCall(LayerSetInputShape(layer, &in));
    PetscCall(LayerSetUp(layer));
    PetscCall(LayerGetOutputShape(layer, &out));
    PetscCall(PetNetShapeToString(&out, sizeof(text), text));
    PetscCheck(out.ndim == 3 && out.dim[0] == 2 && out.dim[1] == 4 && out.dim[2] == 3, PETSC_COMM_SELF, PETSC_ERR_PLIB, "reshape:2x-1x3 of 6x4 gives %s, not 2x4x3", text);
    PetscCall(FillRandom(rnd, 48, x));
    PetscCall(LayerForwardArray(layer, 2, NULL, x, y));
    PetscCheck(!memcmp(x, y, sizeof(x)), PETSC_COMM_SELF, PETSC_ERR_PLIB, "reshape changed the values");
    PetscCall(PetscPrintf(PETSC_COMM_SELF, "reshape:2x-1x3 of 6x4: output %s, the values the same bits\n", text));
    PetscCall(LayerDestroy(&layer));
  }

  /* threads: batches large enough for several parts of each kernel */
  {
    struct {
      const char *kind, *args, *shape[2], *options, *name;
      PetscInt    n;
    } th[] = {
        {"permute", "2,0,1", {"24x40x36", NULL}, NULL, "permute(2,0,1), tiles", 3},
        {"permute", "1,0,2", {"40x50x8", NULL}, NULL, "permute(1,0,2), runs", 3},
        {"einsum", "bqd,bkd->bqk", {"2x16x8", "2x16x8"}, "-einsum_path gemm", "einsum bqd,bkd->bqk GEMM, groups", 24},
        {"einsum", "ij,kj->ki", {"96x80", "64x80"}, "-einsum_path gemm", "einsum ij,kj->ki GEMM, permuted", 2},
        {"einsum", "bqd,bkd->bqk", {"2x16x8", "2x16x8"}, "-einsum_path loop", "einsum bqd,bkd->bqk loop", 24},
        {"einsum", "tij->jt", {"8x30x40", NULL}, NULL, "einsum tij->jt (a sum)", 12},
    };

    for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(th); i++) {
      Layer        layer;
      PetNetShape  in[2];
      PetscInt     nin = th[i].shape[1] ? 2 : 1;
      PetscOptions options;

      for (PetscInt k = 0; k < nin; k++) PetscCall(PetNetShapeFromString(th[i].shape[k], &in[k]));
      PetscCall(LayerCreate(PETSC_COMM_SELF, &layer));
      PetscCall(LayerSetType(layer, th[i].kind));
      PetscCall(LayerSetArguments(layer, th[i].args));
      PetscCall(PetscOptionsCreate(&options));
      if (th[i].options) PetscCall(PetscOptionsInsertString(options, th[i].options));
      PetscCall(PetscObjectSetOptions((PetscObject)layer, options));
      PetscCall(LayerSetFromOptions(layer));
      PetscCall(LayerSetInputShapes(layer, nin, in));
      PetscCall(LayerSetUp(layer));
      PetscCall(TestThreads(layer, th[i].name, nin, in, th[i].n, rnd));
      PetscCall(LayerDestroy(&layer));
      PetscCall(PetscOptionsDestroy(&options));
    }
  }
  PetscCall(PetscPrintf(PETSC_COMM_SELF, "summary: einsum worst relative difference %s\n", worst <= 1e-13 ? "<= 1e-13" : "> 1e-13"));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFinalize());
  return 0;
}
