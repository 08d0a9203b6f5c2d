static const char help[] = "Tests of the upsampling layers, upsample (nearest and linear, 2-D and 3-D samples) and convtranspose2d; the\n"
                           "comparisons with PyTorch are bin/tests/test_conv -pytorch_only -reference tests/expected/upsample_reference.dat\n"
                           "(and convtranspose_reference.dat):\n"
                           "  1. NetTestJacobian on Nets with upsample or convtranspose2d, U-Net graphs among them: dot-product <= 1e-12,\n"
                           "     finite differences <= 1e-6;\n"
                           "  2. grid blocks: the output grid of an N-grid cut into blocks (even ones, as ranks would own them, and random\n"
                           "     uneven ones); each block computed by a local copy (setgridblock) from the input box gridbox gives equals the\n"
                           "     global layer's output bit for bit, and the blocks' backward passes added into the input equal the global\n"
                           "     backward pass to 1e-14; a grid-mode node ((c) shapes) and getscale;\n"
                           "  3. save and load (HDF5 and binary): the same spec and outputs bit for bit.\n"
                           "Options: -nlocal N (samples per rank), -train (only: a small U-Net with upsample trains), -error_spec LIST\n"
                           "-error_shape SHAPE (only build that Net: for the error tests).\n";

#include <petnet.h>
#include <petnettrainer.h>
#include <petnet/private/layerimpl.h>
#include "testutil.h"

/* A small U-Net: down by max pooling, up by bilinear upsampling, the skip joined by channel concatenation */
#define UNET "e1 = conv2d:4:3:1:1; a1 = tanh; p = maxpool:2; e2 = conv2d:6:3:1:1; a2 = tanh; u = upsample:2:linear; cat = concat <- u, a1; d1 = conv2d:4:3:1:1; a3 = tanh; out = conv2d:1:1;"

static PetscErrorCode CreateNet(MPI_Comm comm, const char spec[], const char shape[], Net *net)
{
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(NetCreate(comm, net));
  if (strchr(spec, ';'))
    PetscCall(NetSetGraph(*net, spec));
  else
    PetscCall(NetSetLayers(*net, spec));
  PetscCall(NetSetInputShape(*net, &in));
  PetscCall(NetSetSeed(*net, 7));
  PetscCall(NetSetFromOptions(*net));
  PetscCall(NetSetUp(*net));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------- 1. Jacobian tests */

static PetscErrorCode TestJacobians(PetscInt nlocal)
{
  static const char *cases[][2] = {
      {"upsample:2", "4x3x2"},
      {"upsample:2x3:linear", "4x3x2"},
      {"upsample:3:linear", "3x4x2"},
      {"upsample:1x41", "2x3x1"},
      {"conv2d:3:3:1:1,tanh,upsample:2:linear,conv2d:2:3:1:1", "4x4x2"},
      {"upsample:2:linear", "3x2x3x2"},
      {"upsample:1x2x3", "2x3x2x2"},
      {"upsample:3x1x2:linear", "2x2x3x1"},
      {UNET, "6x6x2"},
      {"convtranspose2d:3", "4x3x2"},
      {"convtranspose2d:4:3:2:1:output_padding=1", "3x4x2"},
      {"convtranspose2d:6:2x3:2x1:1x0:output_padding=1x0:dilation=2:groups=3:bias=0", "3x3x3"},
      {"conv2d:4:3:2:1,tanh,convtranspose2d:2:2:2", "6x5x2"},
      {"e1 = conv2d:4:3:1:1; a1 = tanh; d = conv2d:6:3:2:1; a2 = tanh; u = convtranspose2d:4:2:2; cat = concat <- u, a1; out = conv2d:1:1;", "6x6x2"},
  };

  PetscFunctionBegin;
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    Net         net;
    Vec         X;
    PetscRandom rnd;
    PetscReal   dot, fd;
    PetscViewer quiet;

    PetscCall(CreateNet(PETSC_COMM_WORLD, cases[k][0], cases[k][1], &net));
    PetscCall(CheckSpecRoundTrip(net));
    PetscCall(NetCreateVecs(net, nlocal, &X, NULL));
    PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
    PetscCall(PetscRandomSetInterval(rnd, -2.0, 2.0));
    PetscCall(PetscRandomSetSeed(rnd, 11));
    PetscCall(PetscRandomSeed(rnd));
    PetscCall(VecSetRandom(X, rnd));
    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(dot <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test error %g > 1e-12", cases[k][0], (double)dot);
    PetscCheck(fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: finite-difference error %g > 1e-6", cases[k][0], (double)fd);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian %-24s on %-8s dot-product ok, finite differences ok\n", strchr(cases[k][0], ';') ? "U-Net graph" : cases[k][0], cases[k][1]));
    PetscCall(VecDestroy(&X));
    PetscCall(PetscRandomDestroy(&rnd));
    PetscCall(NetDestroy(&net));
  }
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------ 2. grid blocks */

/* An upsample layer on PETSC_COMM_SELF with these arguments and input shape (nsd spatial sizes, then C) */
static PetscErrorCode CreateUpsample(const char args[], PetscInt nsd, const PetscInt64 size[], PetscInt C, Layer *layer)
{
  PetNetShape in = {nsd + 1, {0}};

  PetscFunctionBegin;
  for (PetscInt d = 0; d < nsd; d++) in.dim[d] = (PetscInt)size[d];
  in.dim[nsd] = C;
  PetscCall(LayerCreate(PETSC_COMM_SELF, layer));
  PetscCall(LayerSetType(*layer, LAYERUPSAMPLE));
  PetscCall(LayerSetArguments(*layer, args));
  PetscCall(LayerSetInputShape(*layer, &in));
  PetscFunctionReturn(0);
}

/* Row-major offset of point p (nsd coordinates) in a grid of the given sizes, times C */
static PetscInt GridOffset(PetscInt nsd, const PetscInt64 size[], const PetscInt64 p[], PetscInt C)
{
  PetscInt64 off = 0;

  for (PetscInt d = 0; d < nsd; d++) off = off * size[d] + p[d];
  return (PetscInt)(off * C);
}

/*
  The sub-box [lo, lo + bsize) of a grid of gsize points, C channels, n samples: copy it out of g into b (forward = 1) or
  add b into it (forward = 0)
*/
static void BoxTransfer(PetscInt n, PetscInt nsd, const PetscInt64 gsize[], const PetscInt64 lo[], const PetscInt64 bsize[], PetscInt C, PetscScalar *g, PetscScalar *b, PetscBool forward)
{
  PetscInt64 gtotal = 1, btotal = 1, p[3];

  for (PetscInt d = 0; d < nsd; d++) {
    gtotal *= gsize[d];
    btotal *= bsize[d];
  }
  for (PetscInt s = 0; s < n; s++)
    for (PetscInt64 j = 0; j < btotal; j++) {
      PetscInt64 q[3], r = j;
      PetscInt   go, bo;

      for (PetscInt d = nsd - 1; d >= 0; d--) {
        q[d] = r % bsize[d];
        p[d] = lo[d] + q[d];
        r /= bsize[d];
      }
      go = (PetscInt)(s * gtotal * C) + GridOffset(nsd, gsize, p, C);
      bo = (PetscInt)(s * btotal * C) + GridOffset(nsd, bsize, q, C);
      for (PetscInt c = 0; c < C; c++) {
        if (forward)
          b[bo + c] = g[go + c];
        else
          g[go + c] += b[bo + c];
      }
    }
}

/* u uniform in [0, 1) from rnd (whose interval is [-1, 1)) */
static PetscErrorCode Uniform(PetscRandom rnd, PetscReal *u)
{
  PetscFunctionBegin;
  PetscCall(PetscRandomGetValueReal(rnd, u));
  *u = (*u + 1) / 2;
  PetscFunctionReturn(0);
}

/* Cut points of [0, N s): even = the outputs [b s, e s) of an even split of the N inputs into parts; else random */
static PetscErrorCode CutPoints(PetscRandom rnd, PetscBool even, PetscInt64 N, PetscInt s, PetscInt *nparts, PetscInt64 cut[])
{
  PetscReal r;

  PetscFunctionBegin;
  PetscCall(Uniform(rnd, &r));
  *nparts = PetscMin(1 + (PetscInt)(3 * r), even ? (PetscInt)N : (PetscInt)(N * s)); /* 1 to 3 parts */
  cut[0]  = 0;
  if (even) {
    for (PetscInt k = 1; k <= *nparts; k++) cut[k] = (N * k / *nparts) * s;
  } else { /* random distinct interior cuts, sorted */
    for (PetscInt k = 1; k < *nparts; k++) {
      PetscInt64 c;
      PetscBool  fresh;

      do {
        PetscCall(Uniform(rnd, &r));
        c     = 1 + (PetscInt64)(r * (N * s - 1));
        fresh = PETSC_TRUE;
        for (PetscInt j = 1; j < k; j++) fresh = (PetscBool)(fresh && cut[j] != c);
      } while (!fresh);
      cut[k] = c;
      for (PetscInt j = k; j > 1 && cut[j - 1] > cut[j]; j--) {
        const PetscInt64 t = cut[j];

        cut[j]     = cut[j - 1];
        cut[j - 1] = t;
      }
    }
    cut[*nparts] = N * s;
  }
  PetscFunctionReturn(0);
}

typedef struct {
  const char *args;
  PetscInt    nsd, N[3], C;
} GridCase;

/*
  One case, one way of cutting: the blocks' forward passes equal the global one exactly, their backward passes add up to
  the global one. Returns the number of blocks and the largest backward error.
*/
static PetscErrorCode TestGridCase(const GridCase *gc, PetscBool even, PetscRandom rnd, PetscInt *nblocks, PetscReal *dxerr)
{
  const PetscInt n = 2, nsd = gc->nsd, C = gc->C;
  Layer          global;
  PetscInt64     N[3], Nout[3], cut[3][8];
  PetscInt       s[3], nsd2, nparts[3], insize, outsize, total = 1;
  PetscScalar   *x, *y, *dy, *dx, *dxsum;
  PetNetShape    outshape;
  char           spec[64];
  PetscReal      maxdiff = 0, scale = 0;

  PetscFunctionBegin;
  for (PetscInt d = 0; d < nsd; d++) N[d] = gc->N[d];
  PetscCall(CreateUpsample(gc->args, nsd, N, C, &global));
  PetscCall(LayerSetUp(global));
  PetscCall(LayerGetSpec(global, sizeof(spec), spec));
  PetscUseTypeMethod(global, getscale, &nsd2, s);
  PetscCheck(nsd2 == nsd, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: getscale gives %" PetscInt_FMT " dims, not %" PetscInt_FMT, spec, nsd2, nsd);
  PetscCall(LayerGetOutputShape(global, &outshape));
  for (PetscInt d = 0; d < nsd; d++) {
    Nout[d] = N[d] * s[d];
    PetscCheck(outshape.dim[d] == Nout[d], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: output size %" PetscInt_FMT " along dim %" PetscInt_FMT ", getscale says %" PetscInt64_FMT, spec, outshape.dim[d], d, Nout[d]);
  }
  insize  = global->insize;
  outsize = global->outsize;
  PetscCall(PetscMalloc5(n * insize, &x, n * outsize, &y, n * outsize, &dy, n * insize, &dx, n * insize, &dxsum));
  for (PetscInt i = 0; i < n * insize; i++) PetscCall(PetscRandomGetValue(rnd, &x[i]));
  for (PetscInt i = 0; i < n * outsize; i++) PetscCall(PetscRandomGetValue(rnd, &dy[i]));
  PetscCall(PetscArrayzero(dxsum, n * insize));
  PetscCall(LayerForwardArray(global, n, NULL, x, y));
  PetscCall(LayerBackwardArray(global, n, NULL, x, y, dy, dx, NULL));

  for (PetscInt d = 0; d < nsd; d++) {
    PetscCall(CutPoints(rnd, even, N[d], s[d], &nparts[d], cut[d]));
    total *= nparts[d];
  }
  for (PetscInt b = 0; b < total; b++) {
    PetscInt64   olo[3], ohi[3], ilo[3], ihi[3], osize[3], isize[3];
    PetscInt     r = b, bin = 1, bout = 1;
    PetscReal    u;
    Layer        local;
    PetscScalar *xb, *yb, *yref, *dyb, *dxb;
    PetNetShape  lout;

    for (PetscInt d = nsd - 1; d >= 0; d--) {
      olo[d] = cut[d][r % nparts[d]];
      ohi[d] = cut[d][r % nparts[d] + 1];
      r /= nparts[d];
    }
    PetscUseTypeMethod(global, gridbox, nsd, N, olo, ohi, ilo, ihi);
    PetscCall(Uniform(rnd, &u));
    for (PetscInt d = 0; d < nsd; d++) {
      PetscCheck(0 <= ilo[d] && ilo[d] < ihi[d] && ihi[d] <= N[d], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the box [%" PetscInt64_FMT ", %" PetscInt64_FMT ") of block [%" PetscInt64_FMT ", %" PetscInt64_FMT ") leaves the grid [0, %" PetscInt64_FMT ")",
                 spec, ilo[d], ihi[d], olo[d], ohi[d], N[d]);
      if (u < 0.5) { /* a larger box than needed must work as well */
        ilo[d] = PetscMax(ilo[d] - 1, 0);
        ihi[d] = PetscMin(ihi[d] + 1, N[d]);
      }
      osize[d] = ohi[d] - olo[d];
      isize[d] = ihi[d] - ilo[d];
      bin *= (PetscInt)isize[d];
      bout *= (PetscInt)osize[d];
    }
    /* the local copy: same spec, the block, the box's shape */
    PetscCall(CreateUpsample(strchr(spec, ':') ? strchr(spec, ':') + 1 : "", nsd, isize, C, &local));
    PetscUseTypeMethod(local, setgridblock, nsd, N, ilo, ihi, olo, ohi);
    PetscCall(LayerSetUp(local));
    PetscCall(LayerGetOutputShape(local, &lout));
    for (PetscInt d = 0; d < nsd; d++) PetscCheck(lout.dim[d] == osize[d], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: a block's output size %" PetscInt_FMT " along dim %" PetscInt_FMT " is not %" PetscInt64_FMT, spec, lout.dim[d], d, osize[d]);
    PetscCall(PetscMalloc5(n * bin * C, &xb, n * bout * C, &yb, n * bout * C, &yref, n * bout * C, &dyb, n * bin * C, &dxb));
    BoxTransfer(n, nsd, N, ilo, isize, C, x, xb, PETSC_TRUE);
    BoxTransfer(n, nsd, Nout, olo, osize, C, y, yref, PETSC_TRUE);
    BoxTransfer(n, nsd, Nout, olo, osize, C, dy, dyb, PETSC_TRUE);
    PetscCall(LayerForwardArray(local, n, NULL, xb, yb));
    for (PetscInt i = 0; i < n * bout * C; i++)
      PetscCheck(yb[i] == yref[i], PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: block %" PetscInt_FMT " of %" PetscInt_FMT " (%s) differs from the global output at entry %" PetscInt_FMT ": %.17g vs %.17g", spec, b, total, even ? "even" : "uneven", i,
                 (double)PetscRealPart(yb[i]), (double)PetscRealPart(yref[i]));
    PetscCall(LayerBackwardArray(local, n, NULL, xb, yb, dyb, dxb, NULL));
    BoxTransfer(n, nsd, N, ilo, isize, C, dxsum, dxb, PETSC_FALSE);
    PetscCall(PetscFree5(xb, yb, yref, dyb, dxb));
    PetscCall(LayerDestroy(&local));
  }
  for (PetscInt i = 0; i < n * insize; i++) {
    maxdiff = PetscMax(maxdiff, PetscAbsScalar(dxsum[i] - dx[i]));
    scale   = PetscMax(scale, PetscAbsScalar(dx[i]));
  }
  *dxerr   = maxdiff / scale;
  *nblocks = total;
  PetscCheck(*dxerr <= 1e-14, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: the blocks' backward passes differ from the global one by %g", spec, (double)*dxerr);
  PetscCall(PetscFree5(x, y, dy, dx, dxsum));
  PetscCall(LayerDestroy(&global));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestGridBlocks(void)
{
  static const GridCase cases[] = {
      {"2", 2, {5, 7}, 3},        {"2:linear", 2, {5, 7}, 3},    {"3x2:linear", 2, {4, 6}, 2}, {"3:linear", 2, {1, 5}, 2},        {"2x3", 2, {3, 4}, 1},         {"1x41", 2, {2, 7}, 1},
      {"5:linear", 2, {3, 2}, 2}, {"2:linear", 3, {3, 4, 5}, 2}, {"2x1x3", 3, {3, 2, 4}, 2},   {"1x2x3:linear", 3, {2, 3, 4}, 1}, {"3:linear", 3, {2, 2, 3}, 2},
  };
  PetscRandom rnd;
  PetscMPIInt rank;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 17 + rank));
  PetscCall(PetscRandomSeed(rnd));
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    PetscInt  blocks[2] = {0, 0};
    PetscReal err       = 0;

    for (int even = 1; even >= 0; even--)
      for (int rep = 0; rep < 4; rep++) {
        PetscInt  nb = 0;
        PetscReal e  = 0;

        PetscCall(TestGridCase(&cases[k], (PetscBool)even, rnd, &nb, &e));
        blocks[even] += nb;
        err = PetscMax(err, e);
      }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "grid     upsample:%-14s %" PetscInt_FMT "-D: forward on %s blocks exact, backward added up within 1e-14\n", cases[k].args, cases[k].nsd, "even and uneven"));
    PetscCall(PetscInfo(NULL, "upsample:%s: %" PetscInt_FMT " even and %" PetscInt_FMT " uneven blocks, backward error %g\n", cases[k].args, blocks[1], blocks[0], (double)err));
  }
  PetscCall(PetscRandomDestroy(&rnd));

  { /* a node of a Net on a grid: (c) -> (c), and the factors of its grid */
    Layer       node;
    PetNetShape in = {1, {3}}, out;
    PetscInt    nsd, s[3];

    PetscCall(LayerCreate(PETSC_COMM_SELF, &node));
    PetscCall(LayerSetType(node, LAYERUPSAMPLE));
    PetscCall(LayerSetArguments(node, "2x3:linear"));
    node->fielddim = 2;
    PetscCall(LayerSetInputShape(node, &in));
    PetscCall(LayerSetUp(node));
    PetscCall(LayerGetOutputShape(node, &out));
    PetscUseTypeMethod(node, getscale, &nsd, s);
    PetscCheck(PetNetShapeEqual(&in, &out) && nsd == 2 && s[0] == 2 && s[1] == 3, PETSC_COMM_SELF, PETSC_ERR_PLIB, "upsample:2x3:linear on a 2-D grid: output (%" PetscInt_FMT "), %" PetscInt_FMT " factors %" PetscInt_FMT "x%" PetscInt_FMT,
               out.dim[0], nsd, s[0], s[1]);
    PetscCall(LayerDestroy(&node));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "grid     a node of a Net on a 2-D grid: shapes (c) -> (c), getscale 2x3\n"));
  }
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------------------------------------- 3. save and load */

static PetscErrorCode TestSaveLoad(PetscInt nlocal)
{
  const char *spec     = "conv2d:3:3:1:1,upsample:2x3:linear,tanh,convtranspose2d:2:3:2:1:output_padding=1,upsample:2";
  const char *files[2] = {"tests/out/upsample_model.h5", "tests/out/upsample_model.petnet"};
  Net         net;
  Vec         X, Y;
  PetscRandom rnd;
  char        saved[256];

  PetscFunctionBegin;
  PetscCall(CreateNet(PETSC_COMM_WORLD, spec, "4x3x2", &net));
  PetscCall(NetGetSpec(net, sizeof(saved), saved));
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(VecSetRandom(X, rnd));
  PetscCall(NetForward(net, X, Y));
  for (int f = 0; f < 2; f++) {
    Net       again;
    Vec       Y2;
    char      spec2[256];
    PetscBool same;

    PetscCall(NetSave(net, files[f]));
    PetscCall(NetCreate(PETSC_COMM_WORLD, &again));
    PetscCall(NetLoad(again, files[f]));
    PetscCall(NetGetSpec(again, sizeof(spec2), spec2));
    PetscCall(VecDuplicate(Y, &Y2));
    PetscCall(NetForward(again, X, Y2));
    PetscCall(VecEqual(Y, Y2, &same));
    PetscCheck(same && !strcmp(saved, spec2), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the loaded Net (%s) differs from the saved one (%s)", files[f], spec2, saved);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "io       %s: spec %s and outputs bit for bit\n", files[f], spec2));
    PetscCall(VecDestroy(&Y2));
    PetscCall(NetDestroy(&again));
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* --------------------------------------------------------------------------------------------------- training */

/*
  Two Nets learn fixed maps of 8x8 fields x (64 samples, MSE, Adam); the training loss must fall below a tenth of its
  starting value:
    the U-Net: t = 2/9 (3x3 box sum of x, zero outside) + x^2 / 2, on 8x8x1;
    super-resolution through upsample:2 alone (no skip): from the 4x4 coarse field xc = x[2i][2j],
    t[I][J] = xc[I/2][J/2]^2 / 2 + 3/10 xc[I/2][J/2], on 4x4x1 -> 8x8x1.
*/
static PetscErrorCode TestTraining(PetscBool unet)
{
  const PetscInt N = 64, H = 8, W = 8, h = unet ? H : H / 2, w = unet ? W : W / 2;
  MPI_Comm       comm  = PETSC_COMM_WORLD;
  PetNetShape    shape = {3, {h, w, 1}};
  Vec            X, T;
  Dataset        train;
  Net            net;
  Loss           loss;
  Trainer        tr;
  Tao            tao;
  PetscMPIInt    rank;
  PetscReal      loss0, loss1;
  PetscInt       epochs;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(VecCreateMPI(comm, rank ? 0 : N * h * w, PETSC_DETERMINE, &X));
  PetscCall(VecCreateMPI(comm, rank ? 0 : N * H * W, PETSC_DETERMINE, &T));
  if (!rank) {
    PetscScalar *x, *t, *f;

    PetscCall(PetscMalloc1(N * H * W, &f));
    for (PetscInt s = 0; s < N; s++)
      for (PetscInt i = 0; i < H; i++)
        for (PetscInt j = 0; j < W; j++) f[(s * H + i) * W + j] = PetscSinReal(0.9 * s + 0.7 * i * (1 + s % 3) + 0.4 * j * (1 + s % 5));
    PetscCall(VecGetArray(X, &x));
    PetscCall(VecGetArray(T, &t));
    for (PetscInt s = 0; s < N; s++)
      for (PetscInt i = 0; i < H; i++)
        for (PetscInt j = 0; j < W; j++) {
          if (unet) {
            PetscScalar box = 0, v = f[(s * H + i) * W + j];

            for (PetscInt a = PetscMax(i - 1, 0); a <= PetscMin(i + 1, H - 1); a++)
              for (PetscInt b = PetscMax(j - 1, 0); b <= PetscMin(j + 1, W - 1); b++) box += f[(s * H + a) * W + b];
            t[(s * H + i) * W + j] = 2.0 * box / 9.0 + 0.5 * v * v;
            x[(s * H + i) * W + j] = v;
          } else {
            PetscScalar v = f[(s * H + 2 * (i / 2)) * W + 2 * (j / 2)];

            t[(s * H + i) * W + j] = 0.5 * v * v + 0.3 * v;
            if (i % 2 == 0 && j % 2 == 0) x[(s * h + i / 2) * w + j / 2] = v;
          }
        }
    PetscCall(VecRestoreArray(X, &x));
    PetscCall(VecRestoreArray(T, &t));
    PetscCall(PetscFree(f));
  }
  PetscCall(DatasetCreate(comm, &train));
  PetscCall(DatasetSetType(train, DATASETMEMORY));
  PetscCall(DatasetMemorySetData(train, &shape, X, H * W, T));
  PetscCall(DatasetSetBatchSize(train, 16));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetSetSeed(train, 3));
  PetscCall(NetCreate(comm, &net));
  if (unet)
    PetscCall(NetSetGraph(net, UNET));
  else
    PetscCall(NetSetLayers(net, "conv2d:4:3:1:1,tanh,upsample:2,conv2d:1:1"));
  PetscCall(NetSetSeed(net, 5));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSMSE));
  PetscCall(TrainerCreate(comm, &tr));
  PetscCall(TrainerSetNet(tr, net));
  PetscCall(TrainerSetLoss(tr, loss));
  PetscCall(TrainerSetDatasets(tr, train, NULL));
  PetscCall(TrainerSetEpochs(tr, 40));
  PetscCall(TrainerGetTao(tr, &tao));
  PetscCall(TaoSetType(tao, TAOADAM));
  PetscCall(PetNetTaoSetLearningRate(tao, 0.02));
  PetscCall(TrainerSetFromOptions(tr));
  PetscCall(TrainerMonitorCancel(tr));
  PetscCall(TrainerSetUp(tr));
  PetscCall(TrainerEvaluate(tr, train, &loss0, NULL));
  PetscCall(TrainerTrain(tr));
  PetscCall(TrainerEvaluate(tr, train, &loss1, NULL));
  PetscCall(TrainerGetResults(tr, &epochs, NULL, NULL, NULL, NULL));
  PetscCheck(loss1 < 0.1 * loss0, comm, PETSC_ERR_PLIB, "%s did not learn: MSE %g -> %g after %" PetscInt_FMT " epochs", unet ? "the U-Net" : "conv2d,tanh,upsample:2,conv2d", (double)loss0, (double)loss1, epochs);
  PetscCall(PetscPrintf(comm, "train    %s: MSE %.2g -> %.2g in %" PetscInt_FMT " epochs (< 1/10)\n", unet ? "U-Net (maxpool down, upsample:2:linear up, concat skip) on 8x8x1" : "conv2d:4:3:1:1,tanh,upsample:2,conv2d:1:1 from 4x4x1 to 8x8x1",
                        (double)loss0, (double)loss1, epochs));
  PetscCall(TrainerDestroy(&tr));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  nlocal = 3;
  char      errspec[512], errshape[64] = "4x4x2";
  PetscBool errtest, train             = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-train", &train, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_spec", errspec, sizeof(errspec), &errtest));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_shape", errshape, sizeof(errshape), NULL));
  if (errtest) { /* must fail in NetSetLayers/NetSetUp with a message naming the problem */
    Net net;

    PetscCall(CreateNet(PETSC_COMM_WORLD, errspec, errshape, &net));
    PetscCall(NetDestroy(&net));
  } else if (train) {
    PetscCall(TestTraining(PETSC_TRUE));
    PetscCall(TestTraining(PETSC_FALSE));
  } else {
    PetscCall(TestJacobians(nlocal));
    PetscCall(TestGridBlocks());
    PetscCall(TestSaveLoad(nlocal));
  }
  PetscCall(PetscFinalize());
  return 0;
}
