/*
  Derivative checks on any Net, at a user batch X (-net_test_jacobian runs them at the first forward pass):

    dot-product (adjoint) test   |<J v, w> - <v, J^T w>| / (|J v| |w|)        should be ~1e-15, must be <= 1e-12
    central finite differences   |(f(x + h v) - f(x - h v)) / 2h - J v| / |J v|      O(h^2) + O(eps/h), ~1e-9

  for the input Jacobian, the parameter Jacobian, and each layer's Jacobians; v, w random in [-1, 1).

  A Net of ReLUs and max pools is not differentiable everywhere: at a tie in a max (a window of equal values, as over
  an image's zero background) or a ReLU input at exactly 0, f(x + h v) and f(x - h v) follow different pieces and the
  central difference is no derivative (Jv, the derivative of one piece, is not wrong). Such outputs are found from f
  alone, by how its second difference scales with the step: s(h) = |f(x + h v) - 2 f(x) + f(x - h v)| is h^2 f''
  where f is smooth and h |jump of the slope| at a kink, so s(2h) / s(h) is 4 on a smooth piece and 2 at a kink. The
  outputs at kinks are left out of the comparison and counted in the report ("not differentiable at this point"); a
  wrong Jv on smooth outputs still fails the test.
*/
#include <petnet/private/netimpl.h>

/* some node is a convolution of the grid with its channels split across the spatial groups (netexec.c) */
static PetscBool NetHasSpatialModel_Private(Net net)
{
  for (PetscInt k = 0; k < net->nlayers; k++)
    if (net->nodes[k].exec == &NetExecSpatialModel) return PETSC_TRUE;
  return PETSC_FALSE;
}

/* a node reading the Net's input takes integer ids (embedding: Layer.discrete): the input is not differentiable, and a
   perturbed input would not be ids, so the input's finite differences are skipped (its Jacobian, zero, is still
   tested by dot products) */
static PetscBool NetInputDiscrete_Private(Net net)
{
  for (PetscInt k = 0; k < net->nlayers; k++)
    for (PetscInt i = 0; i < net->nodes[k].nin; i++)
      if (net->nodes[k].in[i] == NET_INPUT && net->layers[k]->discrete) return PETSC_TRUE;
  return PETSC_FALSE;
}

static PetscErrorCode RandomVec_Private(PetscRandom rnd, Vec v)
{
  PetscFunctionBegin;
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(VecShift(v, -0.5));
  PetscCall(VecScale(v, 2.0));
  PetscFunctionReturn(0);
}

/* |<A v, w> - <v, A^T w>| / (|A v| |w|) */
static PetscErrorCode DotProductTest_Private(Mat A, PetscRandom rnd, PetscReal *err)
{
  Vec         v, w, Av, ATw;
  PetscScalar a, b;
  PetscReal   nAv, nw;

  PetscFunctionBegin;
  PetscCall(MatCreateVecs(A, &v, &w));
  PetscCall(VecDuplicate(w, &Av));
  PetscCall(VecDuplicate(v, &ATw));
  PetscCall(RandomVec_Private(rnd, v));
  PetscCall(RandomVec_Private(rnd, w));
  PetscCall(MatMult(A, v, Av));
  PetscCall(MatMultTranspose(A, w, ATw));
  PetscCall(VecDot(Av, w, &a));
  PetscCall(VecDot(v, ATw, &b));
  PetscCall(VecNorm(Av, NORM_2, &nAv));
  PetscCall(VecNorm(w, NORM_2, &nw));
  *err = PetscAbsScalar(a - b) / PetscMax(nAv * nw, PETSC_SMALL);
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&w));
  PetscCall(VecDestroy(&Av));
  PetscCall(VecDestroy(&ATw));
  PetscFunctionReturn(0);
}

/* Y = f(z + t v), z being X (wrt = 0) or theta (wrt = 1, restored); zsave a copy of theta */
static PetscErrorCode ForwardAlong_Private(Net net, Vec X, PetscInt wrt, Vec zsave, PetscReal t, Vec v, Vec Y)
{
  PetscFunctionBegin;
  if (wrt) {
    PetscCall(VecWAXPY(net->theta, t, v, zsave));
    PetscCall(NetForward(net, X, Y));
    PetscCall(VecCopy(zsave, net->theta));
  } else {
    Vec Xt;

    PetscCall(VecDuplicate(X, &Xt));
    PetscCall(VecWAXPY(Xt, t, v, X));
    PetscCall(NetForward(net, Xt, Y));
    PetscCall(VecDestroy(&Xt));
  }
  PetscFunctionReturn(0);
}

/*
  The outputs at which f is not differentiable along v (see the top of this file): Yp, Ym = f(z +- h v), Y0 = f(z), and
  Y2p, Y2m = f(z +- 2h v). An output is at a kink if its second difference s(h) stands above rounding (u |f|, u the
  unit round-off of the values) and s(2h) < 3 s(h). mask[i] = 1 there, else 0; *nkink: how many, over the ranks.
*/
static PetscErrorCode FindKinks_Private(Vec Yp, Vec Ym, Vec Y0, Vec Y2p, Vec Y2m, PetscReal u, Vec mask, PetscInt *nkink)
{
  const PetscScalar *p, *m, *o, *p2, *m2;
  PetscScalar       *k;
  PetscReal          ymax, s;
  PetscInt           n, count = 0;

  PetscFunctionBegin;
  PetscCall(VecNorm(Y0, NORM_INFINITY, &ymax));
  PetscCall(VecGetLocalSize(Y0, &n));
  PetscCall(VecGetArrayRead(Yp, &p));
  PetscCall(VecGetArrayRead(Ym, &m));
  PetscCall(VecGetArrayRead(Y0, &o));
  PetscCall(VecGetArrayRead(Y2p, &p2));
  PetscCall(VecGetArrayRead(Y2m, &m2));
  PetscCall(VecGetArray(mask, &k));
  for (PetscInt i = 0; i < n; i++) {
    PetscReal s1 = PetscAbsScalar(p[i] - 2 * o[i] + m[i]), s2 = PetscAbsScalar(p2[i] - 2 * o[i] + m2[i]);

    s    = 1e3 * u * PetscMax(ymax, PETSC_SMALL);
    k[i] = s1 > s && s2 < 3 * s1 ? 1.0 : 0.0;
    count += k[i] != 0.0;
  }
  PetscCall(VecRestoreArray(mask, &k));
  PetscCall(VecRestoreArrayRead(Y2m, &m2));
  PetscCall(VecRestoreArrayRead(Y2p, &p2));
  PetscCall(VecRestoreArrayRead(Y0, &o));
  PetscCall(VecRestoreArrayRead(Ym, &m));
  PetscCall(VecRestoreArrayRead(Yp, &p));
  PetscCall(MPIU_Allreduce(&count, nkink, 1, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)Y0)));
  PetscFunctionReturn(0);
}

/*
  |(f(z + h v) - f(z - h v))/2h - Jv| / |Jv| where z is X (wrt = 0) or theta (wrt = 1), over the outputs at which f is
  differentiable along v; *nkink of the *nout outputs are not (FindKinks_Private()), and are left out. u: the unit
  round-off of the values. Leaves the net forwarded at X.
*/
static PetscErrorCode FiniteDifferenceTest_Private(Net net, Vec X, PetscInt wrt, PetscReal h, PetscReal u, PetscRandom rnd, PetscReal *err, PetscInt *nkink, PetscInt *nout)
{
  Vec       z, v, Jv, Yp, Ym, zsave, Y0, Y2p, Y2m, mask;
  PetscReal nJv, nd;

  PetscFunctionBegin;
  z = wrt ? net->theta : X;
  PetscCall(VecDuplicate(z, &v));
  PetscCall(VecDuplicate(z, &zsave));
  PetscCall(VecCopy(z, zsave));
  PetscCall(VecDuplicate(net->act[net->nlayers], &Jv));
  PetscCall(VecDuplicate(Jv, &Yp));
  PetscCall(VecDuplicate(Jv, &Ym));
  PetscCall(VecDuplicate(Jv, &Y0));
  PetscCall(VecDuplicate(Jv, &Y2p));
  PetscCall(VecDuplicate(Jv, &Y2m));
  PetscCall(VecDuplicate(Jv, &mask));
  PetscCall(RandomVec_Private(rnd, v));
  PetscCall(NetForward(net, X, NULL));
  PetscCall(NetJVP(net, wrt ? NULL : v, wrt ? v : NULL, Jv));
  PetscCall(ForwardAlong_Private(net, X, wrt, zsave, h, v, Yp));
  PetscCall(ForwardAlong_Private(net, X, wrt, zsave, -h, v, Ym));
  PetscCall(ForwardAlong_Private(net, X, wrt, zsave, 0, v, Y0));
  PetscCall(ForwardAlong_Private(net, X, wrt, zsave, 2 * h, v, Y2p));
  PetscCall(ForwardAlong_Private(net, X, wrt, zsave, -2 * h, v, Y2m));
  PetscCall(FindKinks_Private(Yp, Ym, Y0, Y2p, Y2m, u, mask, nkink));
  PetscCall(VecGetSize(Y0, nout));
  PetscCall(VecAXPY(Yp, -1.0, Ym));
  if (*nkink) { /* those outputs out of both norms */
    PetscCall(VecShift(mask, -1.0));
    PetscCall(VecScale(mask, -1.0));
    PetscCall(VecPointwiseMult(Yp, Yp, mask));
    PetscCall(VecPointwiseMult(Jv, Jv, mask));
  }
  PetscCall(VecAXPY(Jv, -0.5 / h, Yp));
  PetscCall(VecNorm(Jv, NORM_2, &nd));
  PetscCall(VecScale(Yp, 0.5 / h));
  PetscCall(VecNorm(Yp, NORM_2, &nJv));
  *err = nd / PetscMax(nJv, PETSC_SMALL);
  PetscCall(NetForward(net, X, NULL));
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&zsave));
  PetscCall(VecDestroy(&Jv));
  PetscCall(VecDestroy(&Yp));
  PetscCall(VecDestroy(&Ym));
  PetscCall(VecDestroy(&Y0));
  PetscCall(VecDestroy(&Y2p));
  PetscCall(VecDestroy(&Y2m));
  PetscCall(VecDestroy(&mask));
  PetscFunctionReturn(0);
}

/* The outputs left out of the finite differences, if any (nothing printed when there are none) */
static PetscErrorCode ViewKinks_Private(PetscViewer viewer, const PetscInt nkink[2], const PetscInt nout[2])
{
  PetscFunctionBegin;
  if (!nkink[0] && !nkink[1]) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "  not differentiable at this point along the directions tried (a tie in a max, or a ReLU input at 0: the two sides of the central difference follow different pieces), left out of the finite differences: "
                                   "input %" PetscInt_FMT " of %" PetscInt_FMT " outputs, parameters %" PetscInt_FMT " of %" PetscInt_FMT "\n",
                                   nkink[0], nout[0], nkink[1], nout[1]));
  PetscFunctionReturn(0);
}

/* |J_low v - J v| / |J v|: the JVP of the Net in its low precision against the same JVP in double, along a random
   input (wrt = 0) or parameter (wrt = 1) direction. Leaves the net forwarded at X in its own precision. */
static PetscErrorCode PrecisionTest_Private(Net net, Vec X, PetscInt wrt, PetscRandom rnd, PetscReal *err)
{
  const NetPrecision precision = net->precision;
  Vec                v, Jlow, Jd;
  PetscReal          nd, ne;

  PetscFunctionBegin;
  PetscCall(VecDuplicate(wrt ? net->theta : X, &v));
  PetscCall(RandomVec_Private(rnd, v));
  PetscCall(VecDuplicate(net->act[net->nlayers], &Jlow));
  PetscCall(VecDuplicate(Jlow, &Jd));
  PetscCall(NetForward(net, X, NULL));
  PetscCall(NetJVP(net, wrt ? NULL : v, wrt ? v : NULL, Jlow));
  PetscCall(NetSetPrecision(net, NET_PRECISION_DOUBLE));
  PetscCall(NetForward(net, X, NULL));
  PetscCall(NetJVP(net, wrt ? NULL : v, wrt ? v : NULL, Jd));
  PetscCall(NetSetPrecision(net, precision));
  PetscCall(NetForward(net, X, NULL));
  PetscCall(VecNorm(Jd, NORM_2, &nd));
  PetscCall(VecAXPY(Jlow, -1.0, Jd));
  PetscCall(VecNorm(Jlow, NORM_2, &ne));
  *err = ne / PetscMax(nd, PETSC_SMALL);
  PetscCall(VecDestroy(&v));
  PetscCall(VecDestroy(&Jlow));
  PetscCall(VecDestroy(&Jd));
  PetscFunctionReturn(0);
}

/*
  NetTestJacobian() at -net_precision single or bfloat16, with tolerances from the unit round-off u of the stored values
  (2^-24 single, 2^-8 bfloat16) and the depth L (each node rounds its outputs once):
    dot product      <= 10 L u          J and J^T computed in low precision are transposes up to their roundings
    against double   <= 10 L u          the low-precision JVP against the double one at the same point
    finite diffs     <= 100 u^(2/3)     single only: h = u^(1/3) balances truncation h^2 and rounding u/h; bfloat16's
                                        8 bits leave finite differences no digit to test, the comparison with double does
    halo exchanges   <= 10 u_float      grid mode: each spatial node's halo exchange H in float (its values are float
                                        whatever the store), dot product of H and H^T; H copies, H^T adds in float
  The per-layer Jacobians read double values and are tested in double (and by the layers' own float tests).
*/
static PetscErrorCode NetTestJacobianLow_Private(Net net, Vec X, PetscViewer viewer, PetscRandom rnd, PetscReal *doterr, PetscReal *fderr)
{
  const PetscReal u   = net->precision == NET_PRECISION_SINGLE ? PetscPowReal(2.0, -24) : PetscPowReal(2.0, -8);
  const PetscReal tol = 10 * net->nlayers * u, fdtol = 100 * PetscPowReal(u, 2.0 / 3);
  Mat             J;
  const PetscReal htol = 10 * PetscPowReal(2.0, -24);
  PetscReal       eJ, eJP = 0, pJ, pJP = 0, fJ = 0, fJP = 0, eH = 0, eM = 0;
  PetscInt        nkink[2] = {0, 0}, nout[2] = {0, 0};
  PetscBool       fd = (PetscBool)(net->precision == NET_PRECISION_SINGLE), ok, discrete = NetInputDiscrete_Private(net);

  PetscFunctionBegin;
  PetscCall(NetForward(net, X, NULL));
  PetscCall(NetGetJacobian(net, &J));
  PetscCall(DotProductTest_Private(J, rnd, &eJ));
  if (net->nparams) {
    PetscCall(NetGetJacobianP(net, &J));
    PetscCall(DotProductTest_Private(J, rnd, &eJP));
  }
  if (net->vgrid) PetscCall(NetSpatialTestHalo_Private(net, rnd, &eH));
  PetscCall(NetModelTestOperators_Private(net, rnd, &eM)); /* double operators */
  PetscCall(PrecisionTest_Private(net, X, 0, rnd, &pJ));
  if (net->nparams) PetscCall(PrecisionTest_Private(net, X, 1, rnd, &pJP));
  if (fd) {
    if (!discrete) PetscCall(FiniteDifferenceTest_Private(net, X, 0, PetscCbrtReal(u), u, rnd, &fJ, &nkink[0], &nout[0]));
    if (net->nparams) PetscCall(FiniteDifferenceTest_Private(net, X, 1, PetscCbrtReal(u), u, rnd, &fJP, &nkink[1], &nout[1]));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "Net Jacobian test (%" PetscInt_FMT " samples, precision %s)\n", net->nglobal, NetPrecisions[net->precision]));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  dot-product |<Jv,w>-<v,J^T w>|/(|Jv||w|): input %.2e, parameters %.2e\n", (double)eJ, (double)eJP));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  against double |J_%s v - J v|/|J v|: input %.2e, parameters %.2e\n", NetPrecisions[net->precision], (double)pJ, (double)pJP));
  if (fd && discrete)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  finite differences |FD - Jv|/|Jv| (h = %.1e): input - (token ids, not differentiable), parameters %.2e\n", (double)PetscCbrtReal(u), (double)fJP));
  else if (fd)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  finite differences |FD - Jv|/|Jv| (h = %.1e): input %.2e, parameters %.2e\n", (double)PetscCbrtReal(u), (double)fJ, (double)fJP));
  if (net->vgrid) PetscCall(PetscViewerASCIIPrintf(viewer, "  halo exchanges in float |<Hx,w>-<x,H^T w>|/(|Hx||w|): %.2e (<= %.1e = 10 u_float)\n", (double)eH, (double)htol));
  if (NetHasSpatialModel_Private(net)) PetscCall(PetscViewerASCIIPrintf(viewer, "  channel split across groups (R, S) |<Av,w>-<v,A^T w>|/(|Av||w|): %.2e (<= 1e-12)\n", (double)eM));
  PetscCall(ViewKinks_Private(viewer, nkink, nout));
  ok = (PetscBool)(PetscMax(eJ, eJP) <= tol && PetscMax(pJ, pJP) <= tol && PetscMax(fJ, fJP) <= fdtol && eH <= htol && eM <= 1e-12);
  if (fd)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  %s (dot-product and against double <= %.1e = 10 L u, finite differences <= %.1e = 100 u^(2/3))\n", ok ? "PASSED" : "FAILED", (double)tol, (double)fdtol));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "  %s (dot-product and against double <= %.1e = 10 L u)\n", ok ? "PASSED" : "FAILED", (double)tol));
  if (doterr) *doterr = PetscMax(PetscMax(eJ, eJP), eH > htol || eM > 1e-12 ? 1.0 : eH); /* a failed halo or split identity fails any dot-product bound */
  if (fderr) *fderr = fd ? PetscMax(fJ, fJP) : PetscMax(pJ, pJP);
  PetscFunctionReturn(0);
}

/* Inside a derivative test every layer is one fixed map (LayerSetFrozen()): dropout repeats its masks, batchnorm keeps
   its running statistics, an ode layer its steps */
PetscErrorCode NetSetFrozen_Private(Net net, PetscBool frozen)
{
  PetscFunctionBegin;
  net->intest = frozen;
  for (PetscInt l = 0; l < net->nlayers; l++) PetscCall(LayerSetFrozen(net->layers[l], frozen));
  PetscFunctionReturn(0);
}

/* NetForwardBackward()'s cotangent: the rows of a fixed array w (the whole output's, this rank's part) */
static PetscErrorCode NetTestCopyCotangent(Net net, PetscInt r0, PetscInt n, const PetscScalar y[], PetscScalar dy[], void *ctx)
{
  const PetscInt nout = net->layers[net->nlayers - 1]->outsize;

  PetscFunctionBegin;
  PetscCall(PetscArraycpy(dy, (const PetscScalar *)ctx + (size_t)r0 * nout, n * nout));
  PetscFunctionReturn(0);
}

/*
  A placed Net (netplace.c): the moves' dot-product test, the JVP against the backward pass (GPipe), and finite
  differences of the backward pass, <J^T w, v> against (<Y(z + h v), w> - <Y(z - h v), w>) / 2h along random
  directions v of the input and of the parameters (w random, fixed), in the precision of the Net; in bfloat16, whose
  8 bits leave finite differences no digit to test, J^T w against the same in double instead (10 L u, as unplaced)
*/
static PetscErrorCode NetTestJacobianPlaced_Private(Net net, Vec X, PetscViewer viewer, PetscRandom rnd, PetscReal *doterr, PetscReal *fderr)
{
  Vec             Y, W, G, dX, v, z0;
  const PetscBool bf16 = (PetscBool)(net->precision == NET_PRECISION_BFLOAT16);
  PetscReal       eM, eS = -1, eJ = -1, fd[2] = {0, 0}, h = net->precision == NET_PRECISION_DOUBLE ? 1e-5 : 1e-2, tol = net->precision == NET_PRECISION_DOUBLE ? 1e-6 : bf16 ? 10 * net->nlayers * PetscPowReal(2.0, -8) : 1e-2;
  PetscReal       dtol = net->precision == NET_PRECISION_DOUBLE ? 1e-12 : net->precision == NET_PRECISION_SINGLE ? 1e-4 : 5e-2; /* the moves alone: 1e-14; the JVP against the backward pass: the round-off of the precision */

  PetscFunctionBegin;
  PetscCall(NetForward(net, X, NULL));
  PetscCall(NetPlaceTestMoves_Private(net, rnd, &eM));
  if (net->seq) PetscCall(NetSequenceTestMoves_Private(net, rnd, &eS)); /* a sequence-parallel stage: its R and G on the stage's communicator */
  PetscCall(VecDuplicate(net->act[net->nlayers], &Y));
  PetscCall(VecDuplicate(Y, &W));
  PetscCall(RandomVec_Private(rnd, W));
  PetscCall(NetCreateParameterVec(net, &G));
  PetscCall(VecDuplicate(X, &dX));
  PetscCall(VecZeroEntries(G));
  { /* J^T w through NetForwardBackward(), which also runs the 1F1B schedule (where NetBackward() alone is refused) */
    const PetscScalar *w;

    PetscCall(VecGetArrayRead(W, &w));
    PetscCall(NetForwardBackward(net, X, NetTestCopyCotangent, (void *)w, NULL, dX, G));
    PetscCall(VecRestoreArrayRead(W, &w));
  }
  if (bf16) { /* bfloat16's 8 bits leave finite differences no digit to test: J^T w against the same in double */
    const NetPrecision precision = net->precision;
    Vec                dXd, Gd;
    const PetscScalar *w;
    PetscReal          nd, ne;

    PetscCall(VecDuplicate(dX, &dXd));
    PetscCall(VecDuplicate(G, &Gd));
    PetscCall(VecZeroEntries(Gd));
    PetscCall(NetSetPrecision(net, NET_PRECISION_DOUBLE));
    PetscCall(VecGetArrayRead(W, &w));
    PetscCall(NetForwardBackward(net, X, NetTestCopyCotangent, (void *)w, NULL, dXd, Gd));
    PetscCall(VecRestoreArrayRead(W, &w));
    PetscCall(NetSetPrecision(net, precision));
    for (PetscInt wrt = 0; wrt < 2; wrt++) {
      Vec low = wrt ? G : dX, dbl = wrt ? Gd : dXd;

      PetscCall(VecNorm(dbl, NORM_2, &nd));
      PetscCall(VecAXPY(dbl, -1.0, low));
      PetscCall(VecNorm(dbl, NORM_2, &ne));
      fd[wrt] = ne / PetscMax(nd, PETSC_SMALL);
    }
    PetscCall(VecDestroy(&dXd));
    PetscCall(VecDestroy(&Gd));
  }
  for (PetscInt wrt = 0; wrt < 2 && !bf16; wrt++) {
    Vec         z = wrt ? net->theta : X;
    PetscScalar fp, fm, g;

    PetscCall(VecDuplicate(z, &v));
    PetscCall(VecDuplicate(z, &z0));
    PetscCall(VecCopy(z, z0));
    PetscCall(RandomVec_Private(rnd, v));
    PetscCall(VecDot(wrt ? G : dX, v, &g));
    PetscCall(VecWAXPY(z, h, v, z0));
    PetscCall(NetForward(net, X, Y));
    PetscCall(VecDot(Y, W, &fp));
    PetscCall(VecWAXPY(z, -h, v, z0));
    PetscCall(NetForward(net, X, Y));
    PetscCall(VecDot(Y, W, &fm));
    PetscCall(VecCopy(z0, z));
    fd[wrt] = PetscAbsScalar((fp - fm) / (2 * h) - g) / PetscMax(PetscAbsScalar(g), PETSC_SMALL);
    PetscCall(VecDestroy(&v));
    PetscCall(VecDestroy(&z0));
  }
  PetscCall(NetForward(net, X, NULL));
  if (NetPlaceKeepsAll_Private(net)) { /* the JVP against the backward pass at X: <J (vx, vth), w> = <vx, J_x^T w> + <vth, J_theta^T w> (GPipe; 1F1B keeps too few values for a JVP) */
    Vec         vx, vth, JY;
    PetscScalar a, b1, b2;

    PetscCall(VecDuplicate(X, &vx));
    PetscCall(VecDuplicate(G, &vth));
    PetscCall(VecDuplicate(Y, &JY));
    PetscCall(RandomVec_Private(rnd, vx));
    PetscCall(RandomVec_Private(rnd, vth));
    PetscCall(NetJVP(net, vx, vth, JY));
    PetscCall(VecDot(JY, W, &a));
    PetscCall(VecDot(vx, dX, &b1));
    PetscCall(VecDot(vth, G, &b2));
    eJ = PetscAbsScalar(a - b1 - b2) / PetscMax(PetscAbsScalar(a), PETSC_SMALL);
    PetscCall(VecDestroy(&vx));
    PetscCall(VecDestroy(&vth));
    PetscCall(VecDestroy(&JY));
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "Net Jacobian test with pipeline stages (%" PetscInt_FMT " samples%s)\n", net->nglobal, eJ < 0 ? "; no JVP with -net_pipeline_schedule 1f1b" : ""));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  moves between stages |<Rx,y>-<x,R^T y>|/|<Rx,y>|: %.2e\n", (double)eM));
  if (eS >= 0) PetscCall(PetscViewerASCIIPrintf(viewer, "  a stage's token split R and attention's all-gather G: |<Av,w>-<v,A^T w>|/(|Av||w|), |R^T R v - v|/|v|, |G^T G v - P v|/|v|: %.2e\n", (double)eS));
  eM = PetscMax(eM, eS);
  if (eJ >= 0) PetscCall(PetscViewerASCIIPrintf(viewer, "  JVP against the backward pass |<Jv,w>-<v,J^T w>|/|<Jv,w>|: %.2e\n", (double)eJ));
  if (bf16)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  the backward pass against double |J^T_bfloat16 w - J^T w|/|J^T w|: input %.2e, parameters %.2e\n", (double)fd[0], (double)fd[1]));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "  finite differences of the backward pass |FD - <J^T w,v>|/|<J^T w,v>|: input %.2e, parameters %.2e\n", (double)fd[0], (double)fd[1]));
  eM = PetscMax(eM, eJ);
  PetscCall(PetscViewerASCIIPrintf(viewer, "  %s (dot-product <= %g, %s <= %.2g)\n", eM <= dtol && PetscMax(fd[0], fd[1]) <= tol ? "PASSED" : "FAILED", (double)dtol, bf16 ? "against double (10 L u)" : "finite differences", (double)tol));
  if (doterr) *doterr = eM;
  if (fderr) *fderr = PetscMax(fd[0], fd[1]);
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&W));
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&dX));
  PetscFunctionReturn(0);
}

/*@
  NetTestJacobian - checks every Jacobian of the Net at the batch X and prints the errors to viewer: dot-product
  (adjoint) tests of the input and parameter Jacobians of the Net and of each layer, and central finite differences
  of the Net's

  Collective

  Input Parameters:
+ net    - the Net
. X      - the input batch to test at
- viewer - an ASCII viewer, or NULL for standard output

  Output Parameters:
+ doterr - the worst dot-product error |<J v, w> - <v, J^T w>| / (|J v| |w|) over the Net and its layers, or NULL
- fderr  - the worst finite-difference error |(f(z + h v) - f(z - h v)) / 2h - J v| / |J v| (h = 1e-5, z the input
           and the parameters), or NULL

  Options Database Key:
. -net_test_jacobian - run the test at the first forward pass (NetSetFromOptions())

  Notes:
  PASSED means dot-product errors <= 1e-12 and finite-difference errors <= 1e-6. Outputs at which the Net is not
  differentiable at X along the direction tried (a tie in a max pool, as over an image's zero background, or a ReLU
  input at exactly 0) are found from the Net's values alone (the second difference grows as h there, as h^2 on a smooth
  piece), left out of the finite differences and counted in a line "not differentiable at this point". At -net_precision single or bfloat16
  (NetSetPrecision()) the tolerances follow from the unit round-off u of the values and the number of layers L: the
  dot products of the Net's Jacobians and their JVPs against the same JVPs in double must be within 10 L u, and (single
  only) central differences with h = u^(1/3) within 100 u^(2/3); fderr then holds the finite-difference error (single)
  or the error against double (bfloat16), and the per-layer Jacobians, which read double values, are not tested. During the test every layer is frozen
  (LayerSetFrozen()): dropout repeats its masks, batchnorm leaves its running statistics alone, an ode layer replays
  its steps, so the finite differences see the map that was differentiated. The directions v, w are random in [-1, 1)
  from a fixed seed. On return the Net is forwarded at X and its parameters are unchanged. A Net whose input is read by
  a node taking integer ids (embedding) is not differentiable in its input: the input's finite differences are
  skipped (printed as "input -") and its Jacobian, zero, is checked by the dot products alone. A placed Net (stages,
  micro-batches, node groups) is tested through its moves' dot products, the JVP against the backward pass (GPipe) and
  finite differences of the backward pass; in bfloat16 the backward pass against the same pass in double (10 L u).

  Level: intermediate

.seealso: `NetGetJacobian()`, `NetGetJacobianP()`, `NetGetLayerJacobian()`, `NetGetLayerJacobianP()`, `LayerSetFrozen()`
@*/
PetscErrorCode NetTestJacobian(Net net, Vec X, PetscViewer viewer, PetscReal *doterr, PetscReal *fderr)
{
  PetscRandom rnd;
  Mat         J;
  PetscReal   e, eJ, eJP, fJ, fJP = 0, worst = 0;
  PetscInt    nkink[2] = {0, 0}, nout[2] = {0, 0};
  PetscBool   saved = net->intest, discrete = NetInputDiscrete_Private(net);

  PetscFunctionBegin;
  PetscValidHeaderSpecific(net, NET_CLASSID, 1);
  PetscValidHeaderSpecific(X, VEC_CLASSID, 2);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)net), &viewer));
  PetscCall(NetSetFrozen_Private(net, PETSC_TRUE));
  PetscCall(PetscRandomCreate(PetscObjectComm((PetscObject)net), &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 42));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(NetSetUp(net));
  if (NetPlaced_Private(net)) {
    PetscCall(NetTestJacobianPlaced_Private(net, X, viewer, rnd, doterr, fderr));
    PetscCall(PetscRandomDestroy(&rnd));
    PetscCall(NetSetFrozen_Private(net, saved));
    PetscFunctionReturn(0);
  }
  if (net->precision != NET_PRECISION_DOUBLE) {
    PetscCall(NetTestJacobianLow_Private(net, X, viewer, rnd, doterr, fderr));
    PetscCall(PetscRandomDestroy(&rnd));
    PetscCall(NetSetFrozen_Private(net, saved));
    PetscFunctionReturn(0);
  }
  PetscCall(NetForward(net, X, NULL));

  PetscCall(NetGetJacobian(net, &J));
  PetscCall(DotProductTest_Private(J, rnd, &eJ));
  PetscCall(NetGetJacobianP(net, &J));
  PetscCall(DotProductTest_Private(J, rnd, &eJP));
  worst = PetscMax(eJ, eJP);
  PetscCall(PetscViewerASCIIPrintf(viewer, "Net Jacobian test (%" PetscInt_FMT " samples)\n", net->nglobal));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  dot-product |<Jv,w>-<v,J^T w>|/(|Jv||w|): input %.2e, parameters %.2e\n", (double)eJ, (double)eJP));
  if (net->seq) { /* sequence parallelism: the move R between the sample split and the token split, R^T, attention's G and G^T */
    PetscReal eR;

    PetscCall(NetSequenceTestMoves_Private(net, rnd, &eR));
    worst = PetscMax(worst, eR);
    PetscCall(PetscViewerASCIIPrintf(viewer, "  token split R and attention's all-gather G: |<Av,w>-<v,A^T w>|/(|Av||w|), |R^T R v - v|/|v|, |G^T G v - P v|/|v|: %.2e\n", (double)eR));
  }
  if (NetHasSpatialModel_Private(net)) { /* the data movement of the convolutions split across groups: the halo exchange H, then R and S */
    PetscReal eH, eM;

    PetscCall(NetSpatialTestHalo_Private(net, rnd, &eH));
    PetscCall(NetModelTestOperators_Private(net, rnd, &eM));
    worst = PetscMax(worst, PetscMax(eH, eM));
    PetscCall(PetscViewerASCIIPrintf(viewer, "  channel split across groups |<Av,w>-<v,A^T w>|/(|Av||w|): halo exchange H %.2e, redistribution R and sum-reduce S %.2e\n", (double)eH, (double)eM));
  }
  for (PetscInt l = 0; l < net->nlayers; l++) {
    Layer layer = net->layers[l];
    char  spec[256];

    PetscCall(LayerGetSpec(layer, sizeof(spec), spec));
    PetscCall(NetGetLayerJacobian(net, l, &J));
    PetscCall(DotProductTest_Private(J, rnd, &e));
    worst = PetscMax(worst, e);
    PetscCall(PetscViewerASCIIPrintf(viewer, "    layer %" PetscInt_FMT " %-20s input %.2e", l, spec, (double)e));
    if (layer->nparams) {
      PetscCall(NetGetLayerJacobianP(net, l, &J));
      PetscCall(DotProductTest_Private(J, rnd, &e));
      worst = PetscMax(worst, e);
      PetscCall(PetscViewerASCIIPrintf(viewer, ", parameters %.2e", (double)e));
    }
    PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  }
  if (discrete)
    fJ = 0;
  else
    PetscCall(FiniteDifferenceTest_Private(net, X, 0, 1e-5, PETSC_MACHINE_EPSILON, rnd, &fJ, &nkink[0], &nout[0]));
  if (net->nparams) PetscCall(FiniteDifferenceTest_Private(net, X, 1, 1e-5, PETSC_MACHINE_EPSILON, rnd, &fJP, &nkink[1], &nout[1]));
  if (discrete)
    PetscCall(PetscViewerASCIIPrintf(viewer, "  finite differences |FD - Jv|/|Jv|: input - (token ids, not differentiable), parameters %.2e\n", (double)fJP));
  else
    PetscCall(PetscViewerASCIIPrintf(viewer, "  finite differences |FD - Jv|/|Jv|: input %.2e, parameters %.2e\n", (double)fJ, (double)fJP));
  PetscCall(ViewKinks_Private(viewer, nkink, nout));
  PetscCall(PetscViewerASCIIPrintf(viewer, "  %s (dot-product <= 1e-12, finite differences <= 1e-6%s)\n", worst <= 1e-12 && PetscMax(fJ, fJP) <= 1e-6 ? "PASSED" : "FAILED",
                                   nkink[0] + nkink[1] == 0                  ? ""
                                   : nkink[0] + nkink[1] < nout[0] + nout[1] ? " where the Net is differentiable"
                                                                             : "; no finite differences: the Net is not differentiable at this point"));
  if (doterr) *doterr = worst;
  if (fderr) *fderr = PetscMax(fJ, fJP);
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(NetSetFrozen_Private(net, saved));
  PetscFunctionReturn(0);
}
