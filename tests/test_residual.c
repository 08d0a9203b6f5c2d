static const char help[] = "Tests of residual blocks, residual(F) and residual(F|P) in a layer list (y = x + F(x), y = P(x) + F(x)):\n"
                           "  1. NetTestJacobian on Nets with residual blocks (dense, conv2d, batchnorm, dropout inside; with a shortcut;\n"
                           "     nested): dot-product tests <= 1e-12, finite differences <= 1e-6, training and evaluation mode, and\n"
                           "     the spec of each Net rebuilds it (NetGetSpec -> NetSetLayers);\n"
                           "  2. the forward pass is x + F(x) and P(x) + F(x) exactly, F and P computed as separate Nets;\n"
                           "  3. the spec syntax: kind(args) = kind:(args), blanks and case, the canonical form NetGetSpec writes;\n"
                           "  4. options reach the inner layers through <layer prefix>res_ and <layer prefix>shortcut_;\n"
                           "  5. the tensors (state_dict names res.<i>.<name>, shortcut.<i>.<name>) tile the parameters and buffers;\n"
                           "  6. NetSave/NetLoad (binary and HDF5) of a Net with residual blocks: identical parameters, buffers, outputs;\n"
                           "  7. a batch that leaves the last rank without samples (collective batchnorm inside a block).\n"
                           "Options: -nlocal N (samples per rank), -error_spec LIST -error_shape SHAPE (only build that Net: error tests).\n";

#include <petnet.h>
#include <petnet/private/layerimpl.h>
#include <petscviewerhdf5.h>
#include "testutil.h"

static PetscErrorCode CreateNet(MPI_Comm comm, const char prefix[], const char spec[], const char shape[], Net *net)
{
  PetNetShape in;

  PetscFunctionBegin;
  PetscCall(PetNetShapeFromString(shape, &in));
  PetscCall(NetCreate(comm, net));
  if (prefix) PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*net, prefix));
  PetscCall(NetSetLayers(*net, spec));
  PetscCall(NetSetInputShape(*net, &in));
  PetscCall(NetSetSeed(*net, 7));
  PetscCall(NetSetFromOptions(*net));
  PetscCall(NetSetUp(*net));
  PetscFunctionReturn(0);
}

/* A batch with values in [-2, 2) from a fixed seed (a parallel PetscRandom: the same global values on any rank count) */
static PetscErrorCode RandomBatch(Net net, PetscInt nlocal, PetscInt seed, Vec *X)
{
  PetscRandom rnd;

  PetscFunctionBegin;
  PetscCall(NetCreateVecs(net, nlocal, X, NULL));
  PetscCall(PetscRandomCreate(PetscObjectComm((PetscObject)net), &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -2.0, 2.0));
  PetscCall(PetscRandomSetSeed(rnd, seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(*X, rnd));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------- 1. Jacobian tests */

typedef struct {
  const char *spec, *shape;
  PetscBool   training;
} JacobianCase;

static const JacobianCase jcases[] = {
    /* dense blocks */
    {"residual(dense:6,tanh,dense:6)", "6", PETSC_TRUE},
    {"dense:5,residual(dense:7,tanh,dense:5),tanh,dense:3", "6", PETSC_TRUE},
    {"dense:5,residual(dense:7,tanh,dense:4|dense:4),softplus,dense:3", "6", PETSC_TRUE},
    {"dense:5,residual(dense:5,batchnorm,tanh,dense:5,batchnorm),dense:3", "6", PETSC_TRUE},
    {"dense:5,residual(dense:5,batchnorm,tanh,dense:5,batchnorm),dense:3", "6", PETSC_FALSE},
    {"dense:6,residual(dense:6,dropout:0.3,tanh,dense:6),dense:2", "6", PETSC_TRUE},
    /* nested blocks */
    {"dense:5,residual(dense:5,tanh,residual(dense:6,sigmoid,dense:5),dense:5),tanh,residual(residual(dense:5)),dense:2", "6", PETSC_TRUE},
    {"residual(dense:4,tanh,residual(dense:4,tanh|dense:4)|dense:4,residual(dense:4)),gelu,dense:2", "6", PETSC_TRUE},
    /* convolutional blocks */
    {"conv2d:4:3:1:1,relu,residual(conv2d:4:3:1:1,batchnorm,relu,conv2d:4:3:1:1,batchnorm),relu,flatten,dense:3", "6x5x3", PETSC_TRUE},
    {"conv2d:4:3:1:1,relu,residual(conv2d:4:3:1:1,batchnorm,relu,conv2d:4:3:1:1,batchnorm),relu,flatten,dense:3", "6x5x3", PETSC_FALSE},
    {"conv2d:4:3:1:1,residual(conv2d:6:3:2:1,tanh,conv2d:6:3:1:1|conv2d:6:1:2:0),tanh,globalavgpool,dense:3", "6x5x3", PETSC_TRUE},
    {"residual(conv2d:4:3:2:1,batchnorm,tanh,conv2d:4:3:1:1,batchnorm|conv2d:4:1:2:0,batchnorm),tanh,flatten,dense:3", "6x5x3", PETSC_TRUE},
    {"conv2d:4:3:1:1,residual(conv2d:4:3:1:1,tanh,residual(conv2d:4:3:1:1,batchnorm,tanh,conv2d:4:3:1:1),conv2d:4:1),globalavgpool,dense:2", "6x5x3", PETSC_TRUE},
};

static PetscErrorCode TestJacobians(PetscInt nlocal)
{
  PetscFunctionBegin;
  for (size_t k = 0; k < sizeof(jcases) / sizeof(jcases[0]); k++) {
    Net         net;
    Vec         X;
    PetscReal   dot, fd;
    PetscViewer quiet;

    PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, jcases[k].spec, jcases[k].shape, &net));
    PetscCall(CheckSpecRoundTrip(net));
    PetscCall(RandomBatch(net, nlocal, 11, &X));
    if (!jcases[k].training) { /* evaluation mode after two training passes: non-trivial running statistics */
      PetscCall(NetForward(net, X, NULL));
      PetscCall(VecScale(X, 0.5));
      PetscCall(VecShift(X, 0.3));
      PetscCall(NetForward(net, X, NULL));
      PetscCall(NetSetTraining(net, PETSC_FALSE));
    }
    PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
    PetscCall(PetscViewerDestroy(&quiet));
    PetscCheck(dot <= 1e-12, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: dot-product test error %g > 1e-12", jcases[k].spec, (double)dot);
    PetscCheck(fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: finite-difference error %g > 1e-6", jcases[k].spec, (double)fd);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "jacobian %-10s %s: dot-product %.1e <= 1e-12, finite differences %.1e <= 1e-6\n", jcases[k].training ? "training" : "evaluation", jcases[k].spec, (double)dot, (double)fd));
    PetscCall(VecDestroy(&X));
    PetscCall(NetDestroy(&net));
  }
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------- 2. forward = x + F(x), P(x) + F(x) */

/* Sets the parameters of dst to entries [offset, offset + n_dst) of the replicated array full */
static PetscErrorCode SetParametersFrom(Net dst, const PetscScalar *full, PetscInt offset)
{
  Vec          theta;
  PetscInt     lo, hi;
  PetscScalar *t;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(dst, &theta));
  PetscCall(VecGetOwnershipRange(theta, &lo, &hi));
  PetscCall(VecGetArrayWrite(theta, &t));
  for (PetscInt i = lo; i < hi; i++) t[i - lo] = full[offset + i];
  PetscCall(VecRestoreArrayWrite(theta, &t));
  PetscFunctionReturn(0);
}

/* y of the residual Net minus the sum of the branch outputs (x for the identity shortcut): must be exactly zero */
static PetscErrorCode TestForwardSemantics(PetscInt nlocal)
{
  const char *F = "dense:4,tanh,dense:5", *P = "dense:5";
  char        spec[256];

  PetscFunctionBegin;
  for (PetscInt shortcut = 0; shortcut < 2; shortcut++) {
    Net                res, fnet, pnet = NULL;
    Vec                X, Y, YF, YP, theta, full;
    VecScatter         toall;
    const PetscScalar *t;
    PetscInt           nF;
    PetscReal          diff;

    PetscCall(PetscSNPrintf(spec, sizeof(spec), shortcut ? "residual(%s|%s)" : "residual(%s,dense:6)", F, P));
    PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, spec, "6", &res));
    PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, shortcut ? F : "dense:4,tanh,dense:5,dense:6", "6", &fnet));
    PetscCall(NetGetNumParameters(fnet, &nF));
    PetscCall(NetGetParameters(res, &theta));
    PetscCall(VecScatterCreateToAll(theta, &toall, &full));
    PetscCall(VecScatterBegin(toall, theta, full, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecScatterEnd(toall, theta, full, INSERT_VALUES, SCATTER_FORWARD));
    PetscCall(VecGetArrayRead(full, &t));
    PetscCall(SetParametersFrom(fnet, t, 0));
    if (shortcut) {
      PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, P, "6", &pnet));
      PetscCall(SetParametersFrom(pnet, t, nF));
    }
    PetscCall(VecRestoreArrayRead(full, &t));
    PetscCall(RandomBatch(res, nlocal, 5, &X));
    PetscCall(NetCreateVecs(res, nlocal, NULL, &Y));
    PetscCall(VecDuplicate(Y, &YF));
    PetscCall(VecDuplicate(Y, &YP));
    PetscCall(NetForward(res, X, Y));
    PetscCall(NetForward(fnet, X, YF));
    if (pnet)
      PetscCall(NetForward(pnet, X, YP));
    else
      PetscCall(VecCopy(X, YP));
    PetscCall(VecAXPY(YF, 1.0, YP));
    PetscCall(VecAXPY(YF, -1.0, Y));
    PetscCall(VecNorm(YF, NORM_INFINITY, &diff));
    PetscCheck(diff == 0.0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: y differs from %s by %g", spec, shortcut ? "F(x) + P(x)" : "x + F(x)", (double)diff);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "forward %s = %s exactly\n", spec, shortcut ? "F(x) + P(x)" : "x + F(x)"));
    PetscCall(VecDestroy(&X));
    PetscCall(VecDestroy(&Y));
    PetscCall(VecDestroy(&YF));
    PetscCall(VecDestroy(&YP));
    PetscCall(VecDestroy(&full));
    PetscCall(VecScatterDestroy(&toall));
    PetscCall(NetDestroy(&res));
    PetscCall(NetDestroy(&fnet));
    PetscCall(NetDestroy(&pnet));
  }
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------ 3. the syntax */

static PetscErrorCode TestSyntax(void)
{
  /* each written form, and the spec NetGetSpec must give for it */
  static const char *forms[][2] = {
      {"dense:6,residual(dense:6,relu,dense:6),dense:2", "dense:6,residual:(dense:6,relu,dense:6),dense:2"},
      {"dense:6,residual:(dense:6,relu,dense:6),dense:2", "dense:6,residual:(dense:6,relu,dense:6),dense:2"},
      {" Dense:6 , RESIDUAL ( dense:6 , Relu,dense:6 ) ,dense:2 ", "dense:6,residual:(dense:6,relu,dense:6),dense:2"},
      {"dense(6),residual(dense(6),tanh|dense:(6)),dense:(2)", "dense:6,residual:(dense:6,tanh|dense:6),dense:2"},
      {"residual(residual(dense:6,tanh)|dense:6),residual:(dense:6)", "residual:(residual:(dense:6,tanh)|dense:6),residual:(dense:6)"},
      {"conv2d:4:3:1:1,residual(conv2d:4:3:1:1,batchnorm:0.2:1e-3,relu)", "conv2d:4:3:1:1,residual:(conv2d:4:3:1:1,batchnorm:0.2:0.001,relu)"},
  };

  PetscFunctionBegin;
  for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
    Net       net;
    char      spec[1024];
    PetscBool same;

    PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, forms[k][0], k == 5 ? "6x5x3" : "6", &net));
    PetscCall(NetGetSpec(net, sizeof(spec), spec));
    PetscCall(PetscStrcmp(spec, forms[k][1], &same));
    PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "\"%s\" gives the spec \"%s\", expected \"%s\"", forms[k][0], spec, forms[k][1]);
    PetscCall(CheckSpecRoundTrip(net));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "syntax \"%s\" -> %s\n", forms[k][0], spec));
    PetscCall(NetDestroy(&net));
  }
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------ 4. options of inner layers */

static PetscErrorCode TestOptions(PetscInt nlocal)
{
  Net       net;
  Vec       X, Y;
  PetscReal diff;
  PetscInt  n1, n2;

  PetscFunctionBegin;
  /* zero first weights in F: F(x) = W2 tanh(0) + 0 = 0, so y = x */
  PetscCall(PetscOptionsSetValue(NULL, "-optf_layer0_res_layer0_dense_init", "zeros"));
  PetscCall(CreateNet(PETSC_COMM_WORLD, "optf_", "residual(dense:7,tanh,dense:6)", "6", &net));
  PetscCall(RandomBatch(net, nlocal, 3, &X));
  PetscCall(VecDuplicate(X, &Y));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecAXPY(Y, -1.0, X));
  PetscCall(VecNorm(Y, NORM_INFINITY, &diff));
  PetscCheck(diff == 0.0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "-optf_layer0_res_layer0_dense_init zeros: y - x = %g, expected 0", (double)diff);
  /* an inner shape changed by an option lays the block, and the Net, out anew */
  PetscCall(NetGetNumParameters(net, &n1));
  PetscCall(PetscOptionsSetValue(NULL, "-optf_layer0_res_layer0_dense_outputs", "9"));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetGetNumParameters(net, &n2));
  PetscCheck(n1 == 7 * 6 + 7 + 6 * 7 + 6 && n2 == 9 * 6 + 9 + 6 * 9 + 6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "-optf_layer0_res_layer0_dense_outputs 9: %" PetscInt_FMT " -> %" PetscInt_FMT " parameters, expected 97 -> 123", n1, n2);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "options -optf_layer0_res_layer0_dense_init zeros: y = x; -optf_layer0_res_layer0_dense_outputs 9: %" PetscInt_FMT " -> %" PetscInt_FMT " parameters\n", n1, n2));
  PetscCall(NetDestroy(&net));
  PetscCall(VecDestroy(&Y));

  /* the shortcut's prefix: zero weights in both branches give y = 0 */
  PetscCall(PetscOptionsSetValue(NULL, "-optp_layer1_res_layer0_dense_init", "zeros"));
  PetscCall(PetscOptionsSetValue(NULL, "-optp_layer1_shortcut_layer0_dense_init", "zeros"));
  PetscCall(CreateNet(PETSC_COMM_WORLD, "optp_", "tanh,residual(dense:3,tanh,dense:4|dense:4)", "6", &net));
  PetscCall(NetCreateVecs(net, nlocal, NULL, &Y));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecNorm(Y, NORM_INFINITY, &diff));
  PetscCheck(diff == 0.0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "-optp_layer1_{res,shortcut}_layer0_dense_init zeros: |y| = %g, expected 0", (double)diff);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "options -optp_layer1_res_layer0_dense_init zeros -optp_layer1_shortcut_layer0_dense_init zeros: y = 0\n"));
  PetscCall(NetDestroy(&net));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------- 5. tensors */

/* Every tensor of the block of entry 1 (the nodes named 1.*, and the join 1) printed with its offset inside the block;
   parameter tensors must tile the block's parameters and buffer tensors its buffers exactly once */
static PetscErrorCode TestTensors(void)
{
  Net             net;
  LayerTensorInfo info[LAYER_MAX_TENSORS];
  PetscInt        nt, nl, *pcount, *bcount, pstart = -1, pend = 0, np = 0, nb = 0, boff = 0;

  PetscFunctionBegin;
  PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, "conv2d:4:3:1:1,residual(conv2d:4:3:1:1:bias=0,batchnorm,relu,residual(conv2d:4:1,batchnorm)|conv2d:4:1,batchnorm)", "6x5x3", &net));
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt pass = 0; pass < 2; pass++) { /* pass 0 sizes the block, pass 1 prints and counts */
    for (PetscInt l = 0; l < nl; l++) {
      Layer       layer;
      const char *name;
      PetscInt    start, end;
      PetscBool   inblock;

      PetscCall(NetGetLayerName(net, l, &name));
      PetscCall(PetscStrbeginswith(name, "1.", &inblock));
      if (!inblock && strcmp(name, "1")) continue;
      PetscCall(NetGetLayer(net, l, &layer));
      PetscCall(NetGetLayerParameterRange(net, l, &start, &end));
      if (pass == 0) {
        if (pstart < 0) pstart = start;
        pend = end;
        nb += layer->nbuffers;
        continue;
      }
      PetscCall(LayerGetTensors(layer, &nt, info));
      for (PetscInt t = 0; t < nt; t++) {
        char     dims[64] = "", full[128];
        PetscInt offset   = info[t].offset + (info[t].buffer ? boff : start - pstart);

        for (PetscInt d = 0; d < info[t].ndim; d++) {
          size_t len;

          PetscCall(PetscStrlen(dims, &len));
          PetscCall(PetscSNPrintf(dims + len, sizeof(dims) - len, d ? "x%" PetscInt_FMT : "%" PetscInt_FMT, info[t].dims[d]));
        }
        PetscCall(PetscSNPrintf(full, sizeof(full), "%s.%s", name, info[t].name));
        PetscCall(PetscPrintf(PETSC_COMM_WORLD, "tensor %-26s %-9s offset %4" PetscInt_FMT " size %4" PetscInt_FMT " shape %s\n", full, info[t].buffer ? "buffer" : "parameter", offset, info[t].size, dims));
        for (PetscInt i = offset; i < offset + info[t].size; i++) {
          PetscCheck(i >= 0 && i < (info[t].buffer ? nb : np), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "tensor %s reaches outside its block", full);
          (info[t].buffer ? bcount : pcount)[i]++;
        }
      }
      boff += layer->nbuffers;
    }
    if (pass == 0) {
      np = pend - pstart;
      PetscCall(PetscCalloc2(np, &pcount, nb, &bcount));
    }
  }
  for (PetscInt i = 0; i < np; i++) PetscCheck(pcount[i] == 1, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "parameter %" PetscInt_FMT " is in %" PetscInt_FMT " tensors", i, pcount[i]);
  for (PetscInt i = 0; i < nb; i++) PetscCheck(bcount[i] == 1, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "buffer value %" PetscInt_FMT " is in %" PetscInt_FMT " tensors", i, bcount[i]);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "tensors: the block tiles %" PetscInt_FMT " parameters and %" PetscInt_FMT " buffer values\n", np, nb));
  PetscCall(NetView(net, PETSC_VIEWER_STDOUT_WORLD));
  PetscCall(PetscFree2(pcount, bcount));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* -------------------------------------------------------------------------------------------------- 6. save/load */

/* Same spec, parameters, buffers, and outputs bit for bit in evaluation and training mode */
static PetscErrorCode CheckSame(Net ref, Net net, PetscInt nlocal, Vec X, const char what[])
{
  char      s1[1024], s2[1024];
  PetscBool same;
  Vec       t1, t2, Y1, Y2;
  PetscInt  nl;

  PetscFunctionBegin;
  PetscCall(NetGetSpec(ref, sizeof(s1), s1));
  PetscCall(NetGetSpec(net, sizeof(s2), s2));
  PetscCall(PetscStrcmp(s1, s2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: layer list \"%s\" after loading, \"%s\" saved", what, s2, s1);
  PetscCall(NetGetParameters(ref, &t1));
  PetscCall(NetGetParameters(net, &t2));
  PetscCall(VecEqual(t1, t2, &same));
  PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: parameters differ after loading", what);
  PetscCall(NetGetNumLayers(ref, &nl));
  for (PetscInt l = 0; l < nl; l++) {
    Layer a, b;

    PetscCall(NetGetLayer(ref, l, &a));
    PetscCall(NetGetLayer(net, l, &b));
    PetscCheck(a->nbuffers == b->nbuffers, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: layer %" PetscInt_FMT " has %" PetscInt_FMT " buffer values after loading, %" PetscInt_FMT " saved", what, l, b->nbuffers, a->nbuffers);
    PetscCall(PetscArraycmp(a->buffers, b->buffers, a->nbuffers, &same));
    PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: buffers of layer %" PetscInt_FMT " differ after loading", what, l);
  }
  PetscCall(NetCreateVecs(ref, nlocal, NULL, &Y1));
  PetscCall(VecDuplicate(Y1, &Y2));
  for (PetscInt mode = 0; mode < 2; mode++) { /* evaluation (running statistics), then training (batch statistics) */
    PetscCall(NetSetTraining(ref, (PetscBool)mode));
    PetscCall(NetSetTraining(net, (PetscBool)mode));
    PetscCall(NetForward(ref, X, Y1));
    PetscCall(NetForward(net, X, Y2));
    PetscCall(VecEqual(Y1, Y2, &same));
    PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: outputs in %s mode differ after loading", what, mode ? "training" : "evaluation");
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "save/load %s: same spec, parameters and buffers; outputs identical in evaluation and training mode\n", what));
  PetscCall(VecDestroy(&Y1));
  PetscCall(VecDestroy(&Y2));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestSaveLoad(PetscInt nlocal)
{
  const char *spec   = "conv2d:4:3:1:1,relu,residual(conv2d:4:3:1:1,batchnorm,relu,conv2d:4:3:1:1,batchnorm),"
                       "residual(conv2d:6:3:2:1,batchnorm,relu,residual(conv2d:6:3:1:1,batchnorm)|conv2d:6:1:2:0,batchnorm),relu,flatten,dense:3";
  const char *ext[2] = {"petnet", "h5"};
  Net         ref;
  Vec         X;
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, spec, "6x5x3", &ref));
  PetscCall(RandomBatch(ref, nlocal, 13, &X));
  PetscCall(NetForward(ref, X, NULL)); /* training passes move the running statistics away from 0 and 1 */
  PetscCall(VecScale(X, 0.7));
  PetscCall(NetForward(ref, X, NULL));
  for (PetscInt e = 0; e < 2; e++) {
    Net  net;
    char file[PETSC_MAX_PATH_LEN], what[64];

    PetscCall(PetscSNPrintf(file, sizeof(file), "tests/out/residual_%d.%s", size, ext[e]));
    PetscCall(PetscSNPrintf(what, sizeof(what), "(%s)", e ? "HDF5" : "binary"));
    PetscCall(NetSave(ref, file));
    PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
    PetscCall(NetLoad(net, file));
    PetscCall(CheckSame(ref, net, nlocal, X, what));
    if (e == 1) { /* the PyTorch state_dict names of the nested tensors */
      PetscViewer viewer;
      const char *names[] = {"2.res.0.weight", "2.res.1.running_var", "3.res.3.res.1.running_mean", "3.shortcut.0.bias", "3.shortcut.1.weight"};

      PetscCall(PetscViewerHDF5Open(PETSC_COMM_WORLD, file, FILE_MODE_READ, &viewer));
      for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        PetscBool has;

        PetscCall(PetscViewerHDF5HasDataset(viewer, names[k], &has));
        PetscCheck(has, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s has no dataset %s", file, names[k]);
      }
      PetscCall(PetscViewerDestroy(&viewer));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "save/load (HDF5): datasets 2.res.0.weight, 2.res.1.running_var, 3.res.3.res.1.running_mean, 3.shortcut.0.bias, 3.shortcut.1.weight present\n"));
    }
    PetscCall(NetDestroy(&net));
  }
  PetscCall(VecDestroy(&X));
  PetscCall(NetDestroy(&ref));
  PetscFunctionReturn(0);
}

/* ------------------------------------------------------------------------------------------------ 7. empty rank */

static PetscErrorCode TestEmptyRank(void)
{
  PetscMPIInt size, rank;
  Net         net;
  Vec         X;
  PetscReal   dot, fd;
  PetscViewer quiet;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  if (size == 1) PetscFunctionReturn(0);
  PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, "conv2d:3:3:1:1,residual(conv2d:3:3:1:1,batchnorm,tanh|conv2d:3:1,batchnorm),tanh,flatten,dense:2", "4x4x2", &net));
  PetscCall(RandomBatch(net, rank == size - 1 ? 0 : 2, 17, &X));
  PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &quiet));
  PetscCall(NetTestJacobian(net, X, quiet, &dot, &fd));
  PetscCall(PetscViewerDestroy(&quiet));
  PetscCheck(dot <= 1e-12 && fd <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "last rank without samples: dot-product error %g, finite differences %g", (double)dot, (double)fd);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "last rank without samples: dot-product %.1e <= 1e-12, finite differences %.1e <= 1e-6\n", (double)dot, (double)fd));
  PetscCall(VecDestroy(&X));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  nlocal = 3;
  char      errspec[1024], errshape[64] = "6";
  PetscBool errtest;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_spec", errspec, sizeof(errspec), &errtest));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-error_shape", errshape, sizeof(errshape), NULL));
  if (errtest) { /* the error tests: building this Net must fail */
    Net net;

    PetscCall(CreateNet(PETSC_COMM_WORLD, NULL, errspec, errshape, &net));
    PetscCall(NetDestroy(&net));
  } else {
    PetscCall(TestJacobians(nlocal));
    PetscCall(TestForwardSemantics(nlocal));
    PetscCall(TestSyntax());
    PetscCall(TestOptions(nlocal));
    PetscCall(TestTensors());
    PetscCall(TestSaveLoad(nlocal));
    PetscCall(TestEmptyRank());
  }
  PetscCall(PetscFinalize());
  return 0;
}
