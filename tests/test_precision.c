static const char help[] = "A Net at -net_precision single or bfloat16 against the same Net in double (NetSetPrecision()).\n"
                           "  default          forward Y, input cotangent dX and parameter gradient G on -nsamples samples, each\n"
                           "                   within 10 L u of double (u the unit round-off of the values, L the layers), and the\n"
                           "                   norms of the low-precision Y and G printed (the same at any rank count to round-off; in bfloat16\n"
                           "                   those of -net_backend native where oneDNN has bfloat16 kernels on this CPU, whose products\n"
                           "                   depend on the CPU); and the\n"
                           "                   fused backward passes (relu -> maxpool, netfuse.c) the same bits as separate ones (-net_fuse false);\n"
                           "                   in bfloat16 the kinds' bfloat16 kernels (maxpool) the same bits as their float kernels on\n"
                           "                   widened copies (-net_bfloat16_kernels false)\n"
                           "  -case secondorder   also the JVP, the exact Hessian-vector product and the second-order input cotangent\n"
                           "                   (NetSecondOrderBackward()) within 20 L u of double (the second-order walk computes in double\n"
                           "                   on the stored, rounded values of the forward pass and the JVP)\n"
                           "  -case layerjacobian  also every node's Jacobian shells (NetGetLayerJacobian(), NetGetLayerJacobianP()): the\n"
                           "                   dot-product test <= 1e-12 (both directions read the same rounded point) and the products\n"
                           "                   within 10 L u of double\n"
                           "  -case cache      with -net_forward_cache N: a pass at X, one at 2X, X again (handed back from the cache, whose\n"
                           "                   slots hold the stored values): the output and gradient the same bits as the first pass\n"
                           "  -case backend    the Net's backend (-net_backend onednn, NetSetBackend()) against native: Y, dX, G and the\n"
                           "                   JVP within 1e-5 relative in single, 10 L u in bfloat16 where oneDNN falls back to native, 20 L u\n"
                           "                   where it has bfloat16 kernels (AVX-512 BF16, AMX: two results each within 10 L u of double)\n"
                           "                   (-backend_bound B: within B where it falls back; 0 for native's bits); and the same bits when run twice; in training\n"
                           "                   mode also the running statistics (the layers' buffers, batchnorm's) one forward pass\n"
                           "                   leaves, from the same start, within the same bound\n"
                           "  -training false  evaluation mode (NetSetTraining()), after one training pass in double (running statistics)\n"
                           "  -input_levels L  the input X rounded to multiples of 1/L (values in [-1, 1] taking 2 L + 1 values: many exact\n"
                           "                   ties in a max pooling's windows, with the backend's and native's tie rules compared)\n";

#include <petnet.h>
#include <petnet/private/layerimpl.h> /* the layers' buffers (running statistics), which no public call returns */

/* whether this Net's bfloat16 products run on oneDNN's bfloat16 kernels (AVX-512 BF16, AMX), whose results depend on
   the CPU; false at other precisions, on the native backend and where oneDNN falls back to native (AVX2) */
static PetscErrorCode OneDNNBF16(Net net, NetPrecision precision, PetscBool *on)
{
  char matmul[64];

  PetscFunctionBegin;
  PetscCall(NetGetBackendKernels(net, sizeof(matmul), matmul, NULL, NULL));
  *on = (PetscBool)(precision == NET_PRECISION_BFLOAT16 && strcmp(matmul, "native"));
  PetscFunctionReturn(0);
}

static PetscErrorCode RelDiff(Vec a, Vec b, PetscReal *err)
{
  Vec       d;
  PetscReal nb, nd;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(a, &d));
  PetscCall(VecWAXPY(d, -1.0, b, a));
  PetscCall(VecNorm(d, NORM_2, &nd));
  PetscCall(VecNorm(b, NORM_2, &nb));
  *err = nd / PetscMax(nb, PETSC_SMALL);
  PetscCall(VecDestroy(&d));
  PetscFunctionReturn(0);
}

/* v_i = sin(a i + b) at the global index i: the same values at any rank count */
static PetscErrorCode FillGlobal(Vec v, PetscReal a, PetscReal b)
{
  PetscInt     rstart, rend;
  PetscScalar *x;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayWrite(v, &x));
  for (PetscInt i = rstart; i < rend; i++) x[i - rstart] = PetscSinReal(a * i + b);
  PetscCall(VecRestoreArrayWrite(v, &x));
  PetscFunctionReturn(0);
}

/* Y = f(X), dX and G (zeroed first) for the cotangent dY, at the Net's current precision */
static PetscErrorCode Evaluate(Net net, Vec X, Vec dY, Vec Y, Vec dX, Vec G)
{
  PetscFunctionBegin;
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(net, dY, dX, G));
  PetscFunctionReturn(0);
}

/* Y, dX, G as Evaluate() and the JVP Jt along (Xt, tht) at X */
static PetscErrorCode EvaluateWithJVP(Net net, Vec X, Vec dY, Vec Xt, Vec tht, Vec V[4])
{
  PetscFunctionBegin;
  PetscCall(Evaluate(net, X, dY, V[0], V[1], V[2]));
  PetscCall(NetJVP(net, Xt, tht, V[3]));
  PetscFunctionReturn(0);
}

/* the relative differences of the Net's Y, dX and G (as Evaluate() gives them now) from the given ones, in e[3] */
static PetscErrorCode EvaluateAgainst(Net net, Vec X, Vec dY, Vec Y, Vec dX, Vec G, PetscReal e[3])
{
  Vec Y2, dX2, G2;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(Y, &Y2));
  PetscCall(VecDuplicate(dX, &dX2));
  PetscCall(VecDuplicate(G, &G2));
  PetscCall(Evaluate(net, X, dY, Y2, dX2, G2));
  PetscCall(RelDiff(Y, Y2, &e[0]));
  PetscCall(RelDiff(dX, dX2, &e[1]));
  PetscCall(RelDiff(G, G2, &e[2]));
  PetscCall(VecDestroy(&Y2));
  PetscCall(VecDestroy(&dX2));
  PetscCall(VecDestroy(&G2));
  PetscFunctionReturn(0);
}

/*
  The running statistics (every layer's buffers, the same on every rank) that one training forward pass at X leaves,
  with the Net's backend against -net_backend native from the same start: their largest difference relative to the
  largest buffer in *err, their number in *total; the buffers are restored after
*/
static PetscErrorCode BuffersAgainstNative(Net net, Vec X, PetscInt *total, PetscReal *err)
{
  PetscInt     nlayers, o;
  PetscScalar *start, *after;
  NetBackend   backend;
  PetscReal    num = 0, den = 0;

  PetscFunctionBegin;
  *err   = 0;
  *total = 0;
  PetscCall(NetGetBackend(net, &backend));
  PetscCall(NetGetNumLayers(net, &nlayers));
  for (PetscInt l = 0; l < nlayers; l++) {
    Layer layer;

    PetscCall(NetGetLayer(net, l, &layer));
    *total += layer->nbuffers;
  }
  if (!*total) PetscFunctionReturn(0);
  PetscCall(PetscMalloc2(*total, &start, *total, &after));
  for (PetscInt pass = 0; pass < 3; pass++) { /* 0: keep the start; 1: the backend's pass; 2: native's, compared */
    if (pass) PetscCall(NetSetBackend(net, pass == 1 ? backend : NET_BACKEND_NATIVE));
    if (pass) PetscCall(NetForward(net, X, NULL));
    o = 0;
    for (PetscInt l = 0; l < nlayers; l++) {
      Layer layer;

      PetscCall(NetGetLayer(net, l, &layer));
      for (PetscInt i = 0; i < layer->nbuffers; i++, o++) {
        if (pass == 0) start[o] = layer->buffers[i];
        if (pass == 1) after[o] = layer->buffers[i];
        if (pass == 2) {
          num = PetscMax(num, PetscAbsScalar(after[o] - layer->buffers[i]));
          den = PetscMax(den, PetscAbsScalar(layer->buffers[i]));
        }
        if (pass) layer->buffers[i] = start[o]; /* the same start for the next pass, and after */
      }
    }
  }
  PetscCall(NetSetBackend(net, backend));
  *err = num / PetscMax(den, PETSC_SMALL);
  PetscCall(PetscFree2(start, after));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  Net          net;
  Vec          X, Y, dY, dX, G;
  PetscInt     nsamples = 6, nlocal, nlayers;
  PetscMPIInt  rank, size;
  NetPrecision precision;
  char         which[32] = "";
  PetscReal    e[3], f[3], u, tol, nY, nG;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nsamples", &nsamples, NULL));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  nlocal = nsamples / size + (rank < nsamples % size); /* the same samples split over any number of ranks */
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", which, sizeof(which), NULL));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetUp(net));
  PetscCall(NetGetPrecision(net, &precision));
  PetscCheck(precision != NET_PRECISION_DOUBLE, PETSC_COMM_WORLD, PETSC_ERR_USER, "Give -net_precision single or bfloat16");
  PetscCall(NetGetNumLayers(net, &nlayers));
  PetscCall(NetCreateVecs(net, nlocal, &X, &Y));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(FillGlobal(X, 1.3, 0.2));
  PetscCall(FillGlobal(dY, 0.7, 1.1));
  {
    PetscBool training = PETSC_TRUE;

    PetscCall(PetscOptionsGetBool(NULL, NULL, "-training", &training, NULL));
    if (!training) { /* running statistics other than (0, 1): one training pass in double at 2X - 0.3 first */
      Vec X2;

      PetscCall(VecDuplicate(X, &X2));
      PetscCall(VecCopy(X, X2));
      PetscCall(VecScale(X2, 2.0));
      PetscCall(VecShift(X2, -0.3));
      PetscCall(NetSetPrecision(net, NET_PRECISION_DOUBLE));
      PetscCall(NetForward(net, X2, NULL));
      PetscCall(NetSetPrecision(net, precision));
      PetscCall(NetSetTraining(net, PETSC_FALSE));
      PetscCall(VecDestroy(&X2));
    }
  }
  {
    PetscInt levels = 0;

    PetscCall(PetscOptionsGetInt(NULL, NULL, "-input_levels", &levels, NULL));
    if (levels > 0) {
      PetscScalar *x;
      PetscInt     n;

      PetscCall(VecGetLocalSize(X, &n));
      PetscCall(VecGetArray(X, &x));
      for (PetscInt i = 0; i < n; i++) x[i] = PetscFloorReal(levels * PetscRealPart(x[i]) + 0.5) / levels;
      PetscCall(VecRestoreArray(X, &x));
    }
  }

  u   = precision == NET_PRECISION_SINGLE ? PetscPowReal(2.0, -24) : PetscPowReal(2.0, -8);
  tol = 10 * nlayers * u;
  if (!strcmp(which, "secondorder")) { /* JVP and the second-order adjoint along (dX, dtheta), against double */
    Vec       H[2], dXd[2], Yd[2], dth;
    PetscReal eso[3];

    PetscCall(VecDuplicate(G, &dth));
    PetscCall(FillGlobal(dth, 0.3, 0.5));
    PetscCall(FillGlobal(dX, 0.9, 0.4));
    for (PetscInt p = 0; p < 2; p++) {
      PetscCall(NetSetPrecision(net, p ? NET_PRECISION_DOUBLE : precision));
      PetscCall(VecDuplicate(G, &H[p]));
      PetscCall(VecDuplicate(X, &dXd[p]));
      PetscCall(VecDuplicate(Y, &Yd[p]));
      PetscCall(VecZeroEntries(H[p]));
      PetscCall(NetForward(net, X, NULL));
      PetscCall(NetJVP(net, dX, dth, Yd[p]));
      PetscCall(NetSecondOrderBackward(net, dY, dY, dXd[p], H[p]));
    }
    PetscCall(NetSetPrecision(net, precision));
    PetscCall(RelDiff(Yd[0], Yd[1], &eso[0]));
    PetscCall(RelDiff(H[0], H[1], &eso[1]));
    PetscCall(RelDiff(dXd[0], dXd[1], &eso[2]));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "precision %s against double: jvp %s (10 L u), Hessian-vector product %s, second-order input cotangent %s (20 L u = %.1e)\n", NetPrecisions[precision], eso[0] <= tol ? "ok" : "FAILED",
                          eso[1] <= 2 * tol ? "ok" : "FAILED", eso[2] <= 2 * tol ? "ok" : "FAILED", (double)(2 * tol)));
    PetscCheck(eso[0] <= tol && eso[1] <= 2 * tol && eso[2] <= 2 * tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s differs from double by jvp %.2e, Hessian-vector product %.2e, second-order input cotangent %.2e", NetPrecisions[precision], (double)eso[0],
               (double)eso[1], (double)eso[2]);
    for (PetscInt p = 0; p < 2; p++) {
      PetscCall(VecDestroy(&H[p]));
      PetscCall(VecDestroy(&dXd[p]));
      PetscCall(VecDestroy(&Yd[p]));
    }
    PetscCall(VecDestroy(&dth));
  } else if (!strcmp(which, "cache")) { /* the cache's slots hold the store's values (netforwardcache.c) */
    Vec       X2, Y1, G1;
    PetscInt  hits, misses;
    PetscBool sameY, sameG;

    PetscCall(VecDuplicate(X, &X2));
    PetscCall(VecDuplicate(Y, &Y1));
    PetscCall(VecDuplicate(G, &G1));
    PetscCall(VecAXPBY(X2, 2.0, 0.0, X));
    PetscCall(Evaluate(net, X, dY, Y1, dX, G1));
    PetscCall(NetForward(net, X2, NULL));
    PetscCall(Evaluate(net, X, dY, Y, dX, G)); /* X again: a hit on the slot that holds the first pass */
    PetscCall(NetGetForwardCacheStats(net, &hits, &misses));
    PetscCall(VecEqual(Y, Y1, &sameY));
    PetscCall(VecEqual(G, G1, &sameG));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "forward cache in %s: %s from the cache, output and gradient %s\n", NetPrecisions[precision], hits >= 1 ? "handed back" : "NOT handed back", sameY && sameG ? "the same bits" : "DIFFERENT"));
    PetscCheck(hits >= 1 && sameY && sameG, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "forward cache in %s: %" PetscInt_FMT " hits, output %s, gradient %s", NetPrecisions[precision], hits, sameY ? "same" : "differs", sameG ? "same" : "differs");
    PetscCall(VecDestroy(&X2));
    PetscCall(VecDestroy(&Y1));
    PetscCall(VecDestroy(&G1));
  } else if (!strcmp(which, "backend")) { /* the Net's backend against native, and against itself run again */
    const char *names[4] = {"output", "input cotangent", "gradient", "jvp"};
    PetscReal   btol     = precision == NET_PRECISION_SINGLE ? 1e-5 : tol;
    Vec         Xt, tht, A[4], B[4], C[4];
    NetBackend  backend;
    PetscReal   d[4], worst = 0, bset = 0;
    PetscBool   same = PETSC_TRUE, eq, given;

    PetscCall(NetGetBackend(net, &backend));
    PetscCall(PetscOptionsGetReal(NULL, NULL, "-backend_bound", &bset, &given)); /* 0: a fallback, native's numbers exactly */
    if (given) btol = bset;
    { /* oneDNN's bfloat16 products where this CPU has them: two results each within 10 L u of double are within
         20 L u of each other, whatever -backend_bound says */
      PetscBool on;

      PetscCall(OneDNNBF16(net, precision, &on));
      if (on) btol = 2 * tol;
    }
    PetscCall(VecDuplicate(X, &Xt));
    PetscCall(VecDuplicate(G, &tht));
    PetscCall(FillGlobal(Xt, 0.9, 0.4));
    PetscCall(FillGlobal(tht, 0.3, 0.5));
    for (PetscInt i = 0; i < 4; i++) {
      Vec like = i == 0 || i == 3 ? Y : i == 1 ? X : G;

      PetscCall(VecDuplicate(like, &A[i]));
      PetscCall(VecDuplicate(like, &B[i]));
      PetscCall(VecDuplicate(like, &C[i]));
    }
    PetscCall(EvaluateWithJVP(net, X, dY, Xt, tht, A));
    PetscCall(EvaluateWithJVP(net, X, dY, Xt, tht, B)); /* again: the same primitives, the same threads */
    PetscCall(NetSetBackend(net, NET_BACKEND_NATIVE));
    PetscCall(EvaluateWithJVP(net, X, dY, Xt, tht, C));
    PetscCall(NetSetBackend(net, backend));
    for (PetscInt i = 0; i < 4; i++) {
      PetscCall(VecEqual(A[i], B[i], &eq));
      same = (PetscBool)(same && eq);
      PetscCall(RelDiff(A[i], C[i], &d[i]));
      worst = PetscMax(worst, d[i]);
    }
    {
      PetscBool training;
      PetscReal db;
      PetscInt  nbuf;

      PetscCall(NetGetTraining(net, &training));
      if (training) {
        PetscCall(BuffersAgainstNative(net, X, &nbuf, &db));
        if (nbuf) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "running statistics after a training pass, backend %s against native: %s\n", NetBackends[backend], db <= btol ? "ok" : "FAILED"));
        worst = PetscMax(worst, db);
      }
    }
    if (precision == NET_PRECISION_BFLOAT16) /* the bound depends on the CPU; the line does not */
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "backend %s against native in %s (bound %.1e where oneDNN has no bfloat16 kernel on this CPU, 20 L u = %.1e where it has): ", NetBackends[backend], NetPrecisions[precision], (double)(given ? bset : tol),
                            (double)(2 * tol)));
    else
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "backend %s against native in %s (bound %.1e): ", NetBackends[backend], NetPrecisions[precision], (double)btol));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s %s, %s %s, %s %s, %s %s; run twice: %s\n", names[0], d[0] <= btol ? "ok" : "FAILED", names[1], d[1] <= btol ? "ok" : "FAILED", names[2], d[2] <= btol ? "ok" : "FAILED", names[3],
                          d[3] <= btol ? "ok" : "FAILED", same ? "the same bits" : "DIFFERENT"));
    PetscCheck(worst <= btol && same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "backend %s in %s: differs from native by output %.2e, input cotangent %.2e, gradient %.2e, jvp %.2e (bound %.2e); two runs %s", NetBackends[backend], NetPrecisions[precision],
               (double)d[0], (double)d[1], (double)d[2], (double)d[3], (double)btol, same ? "the same bits" : "differ");
    for (PetscInt i = 0; i < 4; i++) {
      PetscCall(VecDestroy(&A[i]));
      PetscCall(VecDestroy(&B[i]));
      PetscCall(VecDestroy(&C[i]));
    }
    PetscCall(VecDestroy(&Xt));
    PetscCall(VecDestroy(&tht));
  } else if (!strcmp(which, "layerjacobian")) { /* every node's shells: adjoint to round-off, and against double */
    PetscReal worstdot = 0, worst = 0;

    for (PetscInt l = 0; l < nlayers; l++) {
      for (PetscInt par = 0; par < 2; par++) {
        Mat       J;
        Vec       v, w, Jv[2], JTw[2];
        PetscReal a, b, nv, nw, d;
        PetscInt  N;

        Layer layer;

        PetscCall(NetGetLayer(net, l, &layer));
        PetscCall(LayerGetNumParameters(layer, &N));
        if (par && !N) continue; /* a node without parameters */
        for (PetscInt p = 0; p < 2; p++) {
          PetscCall(NetSetPrecision(net, p ? NET_PRECISION_DOUBLE : precision));
          PetscCall(NetForward(net, X, NULL));
          if (par)
            PetscCall(NetGetLayerJacobianP(net, l, &J));
          else
            PetscCall(NetGetLayerJacobian(net, l, &J));
          PetscCall(MatCreateVecs(J, &v, &w));
          PetscCall(FillGlobal(v, 0.77, 0.1 * l));
          PetscCall(FillGlobal(w, 0.41, 0.2 * l));
          PetscCall(VecDuplicate(w, &Jv[p]));
          PetscCall(VecDuplicate(v, &JTw[p]));
          PetscCall(MatMult(J, v, Jv[p]));
          PetscCall(MatMultTranspose(J, w, JTw[p]));
          if (!p) { /* the dot-product test of the low-precision shells */
            PetscCall(VecDot(Jv[p], w, &a));
            PetscCall(VecDot(v, JTw[p], &b));
            PetscCall(VecNorm(Jv[p], NORM_2, &nv));
            PetscCall(VecNorm(w, NORM_2, &nw));
            worstdot = PetscMax(worstdot, PetscAbsReal(a - b) / PetscMax(nv * nw, PETSC_SMALL));
          }
          PetscCall(VecDestroy(&v));
          PetscCall(VecDestroy(&w));
        }
        PetscCall(RelDiff(Jv[0], Jv[1], &d));
        worst = PetscMax(worst, d);
        PetscCall(RelDiff(JTw[0], JTw[1], &d));
        worst = PetscMax(worst, d);
        for (PetscInt p = 0; p < 2; p++) {
          PetscCall(VecDestroy(&Jv[p]));
          PetscCall(VecDestroy(&JTw[p]));
        }
      }
    }
    PetscCall(NetSetPrecision(net, precision));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "per-node Jacobians in %s: dot-product tests %s, against double %s\n", NetPrecisions[precision], worstdot <= 1e-12 ? "ok" : "FAILED", worst <= tol ? "ok" : "FAILED"));
    PetscCheck(worstdot <= 1e-12 && worst <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "per-node Jacobians in %s: dot-product error %.2e, difference from double %.2e (bound %.2e)", NetPrecisions[precision], (double)worstdot, (double)worst, (double)tol);
  }

  PetscCall(Evaluate(net, X, dY, Y, dX, G));
  /* the same precision with every pass on its own: the fused backward does the same operations */
  PetscCall(NetSetFusion(net, PETSC_FALSE));
  PetscCall(EvaluateAgainst(net, X, dY, Y, dX, G, f));
  PetscCall(NetSetFusion(net, PETSC_TRUE));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "fused against separate passes: %s\n", f[0] == 0 && f[1] == 0 && f[2] == 0 ? "the same bits" : "FAILED"));
  PetscCheck(f[0] == 0 && f[1] == 0 && f[2] == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The fused passes differ from separate ones: output %.2e, input cotangent %.2e, gradient %.2e", (double)f[0], (double)f[1], (double)f[2]);
  if (precision == NET_PRECISION_BFLOAT16) { /* the kinds' bfloat16 kernels against their float kernels on widened copies */
    Vec       Xt, tht, A[4], B[4];
    PetscReal d = 0, dp;

    PetscCall(VecDuplicate(X, &Xt));
    PetscCall(VecDuplicate(G, &tht));
    PetscCall(FillGlobal(Xt, 0.53, 0.3));
    PetscCall(FillGlobal(tht, 0.29, 0.7));
    for (PetscInt i = 0; i < 4; i++) {
      PetscCall(VecDuplicate(i == 0 || i == 3 ? Y : i == 1 ? dX : G, &A[i]));
      PetscCall(VecDuplicate(A[i], &B[i]));
    }
    PetscCall(EvaluateWithJVP(net, X, dY, Xt, tht, A));
    PetscCall(NetSetBFloat16Kernels(net, PETSC_FALSE));
    PetscCall(EvaluateWithJVP(net, X, dY, Xt, tht, B));
    PetscCall(NetSetBFloat16Kernels(net, PETSC_TRUE));
    for (PetscInt i = 0; i < 4; i++) {
      PetscCall(RelDiff(A[i], B[i], &dp));
      d = PetscMax(d, dp);
      PetscCall(VecDestroy(&A[i]));
      PetscCall(VecDestroy(&B[i]));
    }
    PetscCall(VecDestroy(&Xt));
    PetscCall(VecDestroy(&tht));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "bfloat16 kernels against float copies (output, input cotangent, gradient, JVP): %s\n", d == 0 ? "the same bits" : "FAILED"));
    PetscCheck(d == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The bfloat16 kernels differ from the float ones on widened copies by %.2e (relative)", (double)d);
  }
  /* against double */
  PetscCall(NetSetPrecision(net, NET_PRECISION_DOUBLE));
  PetscCall(EvaluateAgainst(net, X, dY, Y, dX, G, e));
  PetscCall(NetSetPrecision(net, precision));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "precision %s against double (bound 10 L u = %.1e): output %s, input cotangent %s, gradient %s\n", NetPrecisions[precision], (double)tol, e[0] <= tol ? "ok" : "FAILED", e[1] <= tol ? "ok" : "FAILED",
                        e[2] <= tol ? "ok" : "FAILED"));
  PetscCheck(e[0] <= tol && e[1] <= tol && e[2] <= tol, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s differs from double by output %.2e, input cotangent %.2e, gradient %.2e: more than 10 L u = %.2e", NetPrecisions[precision], (double)e[0], (double)e[1],
             (double)e[2], (double)tol);
  {
    NetBackend backend;
    PetscBool  on;

    /* oneDNN's bfloat16 products exist on some CPUs only (AVX-512 BF16, AMX): there the norms would depend on the
       CPU, so they are those of the native backend, the same on every machine (the oneDNN run was held to 10 L u of
       double above); elsewhere the bfloat16 backend falls back to native anyway */
    PetscCall(NetGetBackend(net, &backend));
    PetscCall(OneDNNBF16(net, precision, &on));
    if (on) {
      PetscCall(NetSetBackend(net, NET_BACKEND_NATIVE));
      PetscCall(Evaluate(net, X, dY, Y, dX, G));
      PetscCall(NetSetBackend(net, backend));
    }
  }
  PetscCall(VecNorm(Y, NORM_2, &nY));
  PetscCall(VecNorm(G, NORM_2, &nG));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "|Y| %.5e |G| %.5e\n", (double)nY, (double)nG));

  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dX));
  PetscCall(VecDestroy(&G));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
