static const char help[] = "Loss functions: values computed by hand, numerical stability, finite-difference checks of the gradient\n"
                           "dY = df/dY and of the Hessian product, LossCountCorrect. The batch is distributed by samples over\n"
                           "PETSC_COMM_WORLD, so every number must be the same on any number of ranks.\n"
                           "  -case label_range | label_fraction | target_size_mse | target_size_crossentropy | target_split: misuse that\n"
                           "        must fail with a clear error\n"
                           "  -tokens: crossentropy on outputs (T, V) per sample with T labels, every third one the ignore index\n"
                           "        (-loss_ignore_index, default -100) and the label smoothing of -loss_label_smoothing: the value\n"
                           "        against a plain loop over the counted labels (1e-14), the gradient and the Hessian product by\n"
                           "        finite differences, ignored rows of both exactly zero, a batch of ignored labels giving 0 and a\n"
                           "        zero gradient, LossCountCorrect() skipping them\n";

#include <petnet.h>
#include "testutil.h"

/* A batch Vec of N samples with c entries each, distributed by samples as a Net's batch ([n][c] locally). */
static PetscErrorCode CreateBatch(PetscInt N, PetscInt c, Vec *v)
{
  PetscInt n = PETSC_DECIDE;

  PetscFunctionBegin;
  PetscCall(PetscSplitOwnership(PETSC_COMM_WORLD, &n, &N));
  PetscCall(VecCreateMPI(PETSC_COMM_WORLD, n * c, N * c, v));
  PetscFunctionReturn(0);
}

/* max_i |v[i] - table[i]| over the whole Vec */
static PetscErrorCode MaxDiffFromTable(Vec v, const PetscScalar table[], PetscReal *err)
{
  PetscInt           rstart, rend;
  const PetscScalar *a;
  PetscReal          e = 0;

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetArrayRead(v, &a));
  for (PetscInt i = rstart; i < rend; i++) e = PetscMax(e, PetscAbsScalar(a[i - rstart] - table[i]));
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscCall(MPIU_Allreduce(&e, err, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
  PetscFunctionReturn(0);
}

static PetscErrorCode CreateLoss(LossType type, Loss *loss)
{
  PetscFunctionBegin;
  PetscCall(LossCreate(PETSC_COMM_WORLD, loss));
  PetscCall(LossSetType(*loss, type));
  PetscCall(LossSetFromOptions(*loss));
  PetscFunctionReturn(0);
}

/* crossentropy on nsamp copies of the logits [0, ln 2, ln 3] with label 2: loss = ln 6 - ln 3 = ln 2,
   dY = (softmax - onehot)/N = ([1, 2, 3]/6 - [0, 0, 1]) / N */
static PetscErrorCode TestCrossEntropyByHand(PetscInt nsamp)
{
  Loss         loss;
  Vec          Y, T, dY;
  PetscScalar *y, *t, *g;
  PetscReal    f, err;

  PetscFunctionBegin;
  PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
  PetscCall(CreateBatch(nsamp, 3, &Y));
  PetscCall(CreateBatch(nsamp, 1, &T));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(PetscMalloc3(3 * nsamp, &y, nsamp, &t, 3 * nsamp, &g));
  for (PetscInt s = 0; s < nsamp; s++) {
    y[3 * s + 0] = 0.0;
    y[3 * s + 1] = PetscLogReal(2.0);
    y[3 * s + 2] = PetscLogReal(3.0);
    t[s]         = 2;
    g[3 * s + 0] = (1.0 / 6.0) / nsamp;
    g[3 * s + 1] = (2.0 / 6.0) / nsamp;
    g[3 * s + 2] = (3.0 / 6.0 - 1.0) / nsamp;
  }
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(T, t));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCheck(PetscAbsReal(f - PetscLogReal(2.0)) <= 1e-15, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "crossentropy([0, ln 2, ln 3], label 2) = %.17g, expected ln 2 = %.17g", (double)f, (double)PetscLogReal(2.0));
  PetscCall(MaxDiffFromTable(dY, g, &err));
  PetscCheck(err <= 1e-15, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "crossentropy gradient off by %g from (softmax - onehot)/N", (double)err);
  /* the value without the gradient is the same */
  PetscCall(LossEvaluate(loss, Y, T, &err, NULL));
  PetscCheck(err == f, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "crossentropy value changes when dY is not requested: %.17g vs %.17g", (double)err, (double)f);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "crossentropy [0, ln 2, ln 3] label 2, %" PetscInt_FMT " sample(s): %.15f (ln 2 = %.15f)\n", nsamp, (double)f, (double)PetscLogReal(2.0)));
  PetscCall(PetscFree3(y, t, g));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(VecDestroy(&dY));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/* Large logits: the log-sum-exp must be shifted. Samples (3 classes):
     [1000, -1000, 0] label 0 -> 0 exactly          [1000, -1000, 0] label 1 -> 2000 exactly
     [-1000, 1000, 0] label 2 -> 1000 exactly       [1000, 1000, -1000] label 0 -> ln 2 (to round-off of 1000 + ln 2) */
static PetscErrorCode TestCrossEntropyStable(void)
{
  const PetscScalar y[]   = {1000, -1000, 0, 1000, -1000, 0, -1000, 1000, 0, 1000, 1000, -1000};
  const PetscScalar t[]   = {0, 1, 2, 0};
  const PetscReal   one[] = {0, 2000, 1000, PetscLogReal(2.0)};
  /* softmax - onehot: exp(-1000) and exp(-2000) underflow to exactly 0 */
  const PetscScalar g[] = {0, 0, 0, 1, -1, 0, 0, 1, -1, -0.5, 0.5, 0};
  Loss              loss;
  Vec               Y, T, dY;
  PetscReal         f, err, expect = 0;

  PetscFunctionBegin;
  PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
  PetscCall(CreateBatch(4, 3, &Y));
  PetscCall(CreateBatch(4, 1, &T));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(T, t));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  for (PetscInt s = 0; s < 4; s++) expect += one[s];
  expect /= 4;
  PetscCheck(!PetscIsInfOrNanReal(f), PETSC_COMM_WORLD, PETSC_ERR_FP, "crossentropy of logits +-1000 is not finite: %g", (double)f);
  PetscCheck(PetscAbsReal(f - expect) <= 1e-12 * expect, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "crossentropy of logits +-1000: %.17g, expected %.17g", (double)f, (double)expect);
  PetscCall(VecScale(dY, 4.0));
  PetscCall(MaxDiffFromTable(dY, g, &err));
  PetscCheck(err <= 1e-15, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "crossentropy gradient at logits +-1000 off by %g", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "crossentropy of logits +-1000: %.12f (finite, expected %.12f)\n", (double)f, (double)expect));

  /* the three exact cases alone: (0 + 2000 + 1000)/3 = 1000 exactly */
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(VecDestroy(&dY));
  PetscCall(CreateBatch(3, 3, &Y));
  PetscCall(CreateBatch(3, 1, &T));
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(T, t));
  PetscCall(LossEvaluate(loss, Y, T, &f, NULL));
  PetscCheck(f == 1000.0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "crossentropy of [1000,-1000,0]/0, /1 and [-1000,1000,0]/2: %.17g, expected exactly 1000", (double)f);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "crossentropy of logits +-1000, exact cases: %.17g\n", (double)f));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/* y = [1, 2, 3, 4, 0.5, -1], t = [0, 2, 5, 1, 0, -3]: d = [1, 0, -2, 3, 0.5, 2]
   mse = (1 + 0 + 4 + 9 + 0.25 + 4)/6 = 18.25/6,  dY = 2d/6
   l1  = (1 + 0 + 2 + 3 + 0.5 + 2)/6 = 8.5/6,     dY = sign(d)/6 (0 where d = 0)
   laid out as 3 samples of 2 entries */
static PetscErrorCode TestRegressionByHand(void)
{
  const PetscScalar y[] = {1, 2, 3, 4, 0.5, -1}, t[] = {0, 2, 5, 1, 0, -3};
  const PetscScalar gmse[] = {2.0 / 6, 0, -4.0 / 6, 6.0 / 6, 1.0 / 6, 4.0 / 6};
  const PetscScalar gl1[]  = {1.0 / 6, 0, -1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6};
  const PetscReal   fmse = 18.25 / 6, fl1 = 8.5 / 6;
  Loss              loss;
  Vec               Y, T, dY;
  PetscReal         f, err;

  PetscFunctionBegin;
  PetscCall(CreateBatch(3, 2, &Y));
  PetscCall(VecDuplicate(Y, &T));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(T, t));

  PetscCall(CreateLoss(LOSSMSE, &loss));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCheck(PetscAbsReal(f - fmse) <= 1e-15 * fmse, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "mse = %.17g, expected 18.25/6 = %.17g", (double)f, (double)fmse);
  PetscCall(MaxDiffFromTable(dY, gmse, &err));
  PetscCheck(err <= 1e-15, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "mse gradient off by %g from 2(y - t)/N", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "mse by hand: %.15f (18.25/6)\n", (double)f));
  PetscCall(LossDestroy(&loss));

  PetscCall(CreateLoss(LOSSL1, &loss));
  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCheck(PetscAbsReal(f - fl1) <= 1e-15 * fl1, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "l1 = %.17g, expected 8.5/6 = %.17g", (double)f, (double)fl1);
  PetscCall(MaxDiffFromTable(dY, gl1, &err));
  PetscCheck(err <= 1e-15, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "l1 gradient off by %g from sign(y - t)/N", (double)err);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "l1 by hand: %.15f (8.5/6)\n", (double)f));
  PetscCall(LossDestroy(&loss));

  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(VecDestroy(&dY));
  PetscFunctionReturn(0);
}

/*
  Central finite differences on random data, N samples of c entries:
    gradient  |(f(Y + hV) - f(Y - hV))/2h - <dY, V>| / |<dY, V>|          <= 1e-8
    Hessian   |(dY(Y + hV) - dY(Y - hV))/2h - H V| / |H V|               <= 1e-7  (crossentropy, mse)
    symmetry  |<H V, W> - <V, H W>| / (|H V| |W|)                        <= 1e-14
  For l1 the targets sit at least 0.1 away from the outputs, so Y +- hV crosses no kink.
*/
static PetscErrorCode TestFiniteDifferences(LossType type, PetscInt N, PetscInt c)
{
  const PetscReal h = 1e-5;
  PetscBool       ce;
  Loss            loss;
  Vec             Y, T, V, W, Yh, dY, dYp, dYm, HV, HW;
  PetscScalar    *y, *t;
  PetscRandom     rnd;
  PetscReal       f, fp, fm, nHV, nW, fd, err, herr = 0, serr = 0;
  PetscScalar     dYV, a, b;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(type, LOSSCROSSENTROPY, &ce));
  PetscCall(CreateLoss(type, &loss));
  PetscCall(CreateBatch(N, c, &Y));
  PetscCall(CreateBatch(N, ce ? 1 : c, &T));
  /* the same global data on every rank: draw it from a sequential stream */
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 5));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc2(N * c, &y, N * c, &t));
  for (PetscInt i = 0; i < N * c; i++) {
    PetscReal u, v;

    PetscCall(PetscRandomGetValueReal(rnd, &u));
    PetscCall(PetscRandomGetValueReal(rnd, &v));
    y[i] = 4.0 * u - 2.0;
    t[i] = y[i] + (v < 0.5 ? -1.0 : 1.0) * (0.1 + v); /* |y - t| >= 0.1 */
  }
  if (ce)
    for (PetscInt s = 0; s < N; s++) t[s] = (PetscScalar)((s * 7 + 3) % c);
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(T, t));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(PetscFree2(y, t));

  PetscCall(VecDuplicate(Y, &V));
  PetscCall(VecDuplicate(Y, &W));
  PetscCall(VecDuplicate(Y, &Yh));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(Y, &dYp));
  PetscCall(VecDuplicate(Y, &dYm));
  PetscCall(VecDuplicate(Y, &HV));
  PetscCall(VecDuplicate(Y, &HW));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 17));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(V, rnd));
  PetscCall(VecSetRandom(W, rnd));

  PetscCall(LossEvaluate(loss, Y, T, &f, dY));
  PetscCall(VecDot(dY, V, &dYV));
  PetscCall(VecWAXPY(Yh, h, V, Y));
  PetscCall(LossEvaluate(loss, Yh, T, &fp, dYp));
  PetscCall(VecWAXPY(Yh, -h, V, Y));
  PetscCall(LossEvaluate(loss, Yh, T, &fm, dYm));
  fd  = (fp - fm) / (2 * h);
  err = PetscAbsReal(fd - PetscRealPart(dYV)) / PetscAbsScalar(dYV);
  PetscCheck(err <= 1e-8, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: finite-difference gradient error %g > 1e-8 (FD %.12g, <dY,V> %.12g)", type, (double)err, (double)fd, (double)PetscRealPart(dYV));

  if (!ce) PetscCall(PetscStrcmp(type, LOSSMSE, &ce)); /* ce now means: has a Hessian worth checking */
  if (ce) {
    PetscCall(LossEvaluate(loss, Y, T, &f, NULL)); /* the Hessian is taken at the last evaluated point */
    PetscCall(LossHessianMult(loss, V, HV));
    PetscCall(LossHessianMult(loss, W, HW));
    PetscCall(VecAXPY(dYp, -1.0, dYm));
    PetscCall(VecScale(dYp, 1.0 / (2 * h)));
    PetscCall(VecAXPY(dYp, -1.0, HV));
    PetscCall(VecNorm(dYp, NORM_2, &herr));
    PetscCall(VecNorm(HV, NORM_2, &nHV));
    herr /= nHV;
    PetscCheck(herr <= 1e-7, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: finite-difference Hessian product error %g > 1e-7", type, (double)herr);
    PetscCall(VecDot(HV, W, &a));
    PetscCall(VecDot(V, HW, &b));
    PetscCall(VecNorm(W, NORM_2, &nW));
    serr = PetscAbsScalar(a - b) / (nHV * nW);
    PetscCheck(serr <= 1e-14, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: Hessian not symmetric, |<HV,W> - <V,HW>|/(|HV||W|) = %g", type, (double)serr);
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-12s %2" PetscInt_FMT " samples x %" PetscInt_FMT ": gradient FD ok, Hessian FD %s\n", type, N, c, ce ? "ok" : "(not checked)"));
  PetscCall(PetscInfo(NULL, "%s: gradient FD error %g, Hessian FD error %g, symmetry %g\n", type, (double)err, (double)herr, (double)serr));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(VecDestroy(&V));
  PetscCall(VecDestroy(&W));
  PetscCall(VecDestroy(&Yh));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dYp));
  PetscCall(VecDestroy(&dYm));
  PetscCall(VecDestroy(&HV));
  PetscCall(VecDestroy(&HW));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/* 5 samples, 4 classes: arg-maxes 2, 0, 3, 1, 2; labels 2, 1, 3, 1, 0 -> 3 correct */
static PetscErrorCode TestCountCorrect(void)
{
  const PetscScalar y[] = {0, 1, 5, 2, 9, -1, 3, 8, 0, 0, 0, 0.5, -3, 7, 6.9, 1, 0, 0, 1, -1};
  const PetscScalar t[] = {2, 1, 3, 1, 0};
  Loss              loss;
  Vec               Y, T;
  PetscInt          correct;

  PetscFunctionBegin;
  PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
  PetscCall(CreateBatch(5, 4, &Y));
  PetscCall(CreateBatch(5, 1, &T));
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(T, t));
  PetscCall(LossCountCorrect(loss, Y, T, &correct));
  PetscCheck(correct == 3, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "LossCountCorrect = %" PetscInt_FMT ", expected 3", correct);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "LossCountCorrect: %" PetscInt_FMT " of 5\n", correct));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/*
  Per-token crossentropy: N samples of T labels over V classes (Y [N][T][V], T [N][T]), every third label (of the global
  order) replaced by the ignore index, the label smoothing from the options. The reference is a plain loop over the
  counted labels of the global batch on every rank: sum_l lse(y_l) - (1 - a) y_l[t_l] - (a/V) sum_k y_l[k], over their
  number.
*/
static PetscErrorCode TestTokens(PetscInt N, PetscInt T, PetscInt V)
{
  const PetscReal h = 1e-5;
  const PetscInt  L = N * T;
  Loss            loss;
  Vec             Y, Tv, Vd, Yh, dY, dYp, dYm, HV;
  PetscScalar    *y, *t;
  PetscRandom     rnd;
  PetscReal       f, fp, fm, fref = 0, a = 0, err, herr, nHV, zmax = 0;
  PetscScalar     dYV;
  PetscInt        ignore = -100, counted = 0, rstart, rend, correct;
  PetscBool       has;

  PetscFunctionBegin;
  PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
  PetscCall(LossCrossEntropyGetIgnoreIndex(loss, &has, &ignore));
  PetscCheck(has, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "crossentropy has no ignore index");
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-loss_label_smoothing", &a, NULL));
  PetscCall(CreateBatch(N, T * V, &Y));
  PetscCall(CreateBatch(N, T, &Tv));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 9));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc2(L * V, &y, L, &t));
  for (PetscInt i = 0; i < L * V; i++) {
    PetscReal u;

    PetscCall(PetscRandomGetValueReal(rnd, &u));
    y[i] = 6.0 * u - 3.0;
  }
  for (PetscInt l = 0; l < L; l++) { /* the counted labels avoid the ignore index (which may be a class) */
    PetscInt lbl = (l * 5 + 2) % V;

    t[l] = (PetscScalar)(l % 3 == 1 ? ignore : lbl == ignore ? (lbl + 1) % V : lbl);
  }
  for (PetscInt l = 0; l < L; l++) { /* the reference, in the plainest form */
    PetscReal z = 0, ysum = 0;

    if (l % 3 == 1) continue;
    for (PetscInt k = 0; k < V; k++) z += PetscExpReal(PetscRealPart(y[l * V + k]));
    for (PetscInt k = 0; k < V; k++) ysum += PetscRealPart(y[l * V + k]);
    fref += PetscLogReal(z) - (1 - a) * PetscRealPart(y[l * V + (PetscInt)PetscRealPart(t[l])]) - a / V * ysum;
    counted++;
  }
  fref /= counted;
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(Tv, t));
  PetscCall(PetscRandomDestroy(&rnd));

  PetscCall(VecDuplicate(Y, &Vd));
  PetscCall(VecDuplicate(Y, &Yh));
  PetscCall(VecDuplicate(Y, &dY));
  PetscCall(VecDuplicate(Y, &dYp));
  PetscCall(VecDuplicate(Y, &dYm));
  PetscCall(VecDuplicate(Y, &HV));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 17));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(Vd, rnd));
  PetscCall(PetscRandomDestroy(&rnd));

  PetscCall(LossEvaluate(loss, Y, Tv, &f, dY));
  err = PetscAbsReal(f - fref) / PetscAbsReal(fref);
  PetscCheck(err <= 1e-14, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "per-token crossentropy %.17g, the plain loop over the %" PetscInt_FMT " counted labels %.17g: relative error %g > 1e-14", (double)f, counted, (double)fref, (double)err);
  PetscCall(VecDot(dY, Vd, &dYV));
  PetscCall(VecWAXPY(Yh, h, Vd, Y));
  PetscCall(LossEvaluate(loss, Yh, Tv, &fp, dYp));
  PetscCall(VecWAXPY(Yh, -h, Vd, Y));
  PetscCall(LossEvaluate(loss, Yh, Tv, &fm, dYm));
  err = PetscAbsReal((fp - fm) / (2 * h) - PetscRealPart(dYV)) / PetscAbsScalar(dYV);
  PetscCheck(err <= 1e-8, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "per-token crossentropy: finite-difference gradient error %g > 1e-8", (double)err);
  PetscCall(LossEvaluate(loss, Y, Tv, &f, NULL));
  PetscCall(LossHessianMult(loss, Vd, HV));
  PetscCall(VecAXPY(dYp, -1.0, dYm));
  PetscCall(VecScale(dYp, 1.0 / (2 * h)));
  PetscCall(VecAXPY(dYp, -1.0, HV));
  PetscCall(VecNorm(dYp, NORM_2, &herr));
  PetscCall(VecNorm(HV, NORM_2, &nHV));
  herr /= nHV;
  PetscCheck(herr <= 1e-7, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "per-token crossentropy: finite-difference Hessian product error %g > 1e-7", (double)herr);
  { /* -tokens_dump FILE: the point, the loss, dY, V and H V as text, for tests/torch_crossentropy.py (one rank) */
    char      path[PETSC_MAX_PATH_LEN];
    PetscBool dump;

    PetscCall(PetscOptionsGetString(NULL, NULL, "-tokens_dump", path, sizeof(path), &dump));
    if (dump) {
      FILE              *fp;
      const PetscScalar *g, *vd, *hv;
      PetscMPIInt        size;

      PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
      PetscCheck(size == 1, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-tokens_dump runs on one rank");
      PetscCall(PetscFOpen(PETSC_COMM_SELF, path, "w", &fp));
      PetscCall(VecGetArrayRead(dY, &g));
      PetscCall(VecGetArrayRead(Vd, &vd));
      PetscCall(VecGetArrayRead(HV, &hv));
      PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%" PetscInt_FMT " %" PetscInt_FMT " %" PetscInt_FMT " %" PetscInt_FMT " %.17g %.17g\n", N, T, V, ignore, (double)a, (double)f));
      for (PetscInt i = 0; i < L * V; i++) PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%.17g %.17g %.17g %.17g\n", (double)PetscRealPart(y[i]), (double)PetscRealPart(g[i]), (double)PetscRealPart(vd[i]), (double)PetscRealPart(hv[i])));
      for (PetscInt l = 0; l < L; l++) PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%.17g\n", (double)PetscRealPart(t[l])));
      PetscCall(VecRestoreArrayRead(HV, &hv));
      PetscCall(VecRestoreArrayRead(Vd, &vd));
      PetscCall(VecRestoreArrayRead(dY, &g));
      PetscCall(PetscFClose(PETSC_COMM_SELF, fp));
    }
  }
  { /* the rows of the ignored labels: exactly zero in dY and H V */
    const PetscScalar *g, *hv;

    PetscCall(VecGetOwnershipRange(Y, &rstart, &rend));
    PetscCall(VecGetArrayRead(dY, &g));
    PetscCall(VecGetArrayRead(HV, &hv));
    for (PetscInt i = rstart; i < rend; i++)
      if ((i / V) % 3 == 1) zmax = PetscMax(zmax, PetscMax(PetscAbsScalar(g[i - rstart]), PetscAbsScalar(hv[i - rstart])));
    PetscCall(VecRestoreArrayRead(HV, &hv));
    PetscCall(VecRestoreArrayRead(dY, &g));
    PetscCallMPI(MPIU_Allreduce(MPI_IN_PLACE, &zmax, 1, MPIU_REAL, MPIU_MAX, PETSC_COMM_WORLD));
    PetscCheck(zmax == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "per-token crossentropy: an ignored label's row of dY or H V holds %g, not 0", (double)zmax);
  }
  /* the arg-max of each counted row is its label where the label's logit is raised by 100: all counted, none ignored */
  for (PetscInt l = 0; l < L; l++)
    if (l % 3 != 1) y[l * V + (PetscInt)PetscRealPart(t[l])] += 100;
  PetscCall(FillFromTable(Y, y));
  PetscCall(LossCountCorrect(loss, Y, Tv, &correct));
  PetscCheck(correct == counted, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "LossCountCorrect() = %" PetscInt_FMT " on %" PetscInt_FMT " counted labels each the arg-max of its row (and %" PetscInt_FMT " ignored)", correct, counted, L - counted);
  /* every label ignored: loss 0 and a zero gradient, not NaN */
  for (PetscInt l = 0; l < L; l++) t[l] = (PetscScalar)ignore;
  PetscCall(FillFromTable(Tv, t));
  PetscCall(VecSet(dY, 1.0));
  PetscCall(LossEvaluate(loss, Y, Tv, &f, dY));
  PetscCall(VecNorm(dY, NORM_INFINITY, &zmax));
  PetscCheck(f == 0 && zmax == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "a batch of ignored labels: loss %g and |dY| %g, both should be 0", (double)f, (double)zmax);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "crossentropy on %" PetscInt_FMT " samples (%" PetscInt_FMT ", %" PetscInt_FMT "), ignore index %" PetscInt_FMT ", smoothing %g: loss %.12f = the loop over %" PetscInt_FMT
                        " counted labels; gradient and Hessian FD ok; ignored rows zero; %" PetscInt_FMT " correct; all ignored: 0\n",
                        N, T, V, ignore, (double)a, (double)fref, counted, correct));
  PetscCall(PetscFree2(y, t));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&Tv));
  PetscCall(VecDestroy(&Vd));
  PetscCall(VecDestroy(&Yh));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dYp));
  PetscCall(VecDestroy(&dYm));
  PetscCall(VecDestroy(&HV));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

/* Misuse that must stop with a clear error (run by the core_loss_*_error tests). */
static PetscErrorCode RunErrorCase(const char name[])
{
  PetscBool   match;
  Loss        loss = NULL;
  Vec         Y = NULL, T = NULL;
  PetscScalar y[8] = {0, 1, 2, 3, 4, 5, 6, 7}, t[4] = {0, 1, 0, 1};
  PetscReal   f;

  PetscFunctionBegin;
  PetscCall(PetscStrcmp(name, "label_range", &match));
  if (match) { /* 4 samples, 2 classes, the last label is 2 */
    t[3] = 2;
    PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
    PetscCall(CreateBatch(4, 2, &Y));
    PetscCall(CreateBatch(4, 1, &T));
  }
  PetscCall(PetscStrcmp(name, "label_fraction", &match));
  if (match) { /* a label that is not an integer */
    t[3] = 0.5;
    PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
    PetscCall(CreateBatch(4, 2, &Y));
    PetscCall(CreateBatch(4, 1, &T));
  }
  PetscCall(PetscStrcmp(name, "target_size_mse", &match));
  if (match) { /* output 4 x 2, target 4 x 1 */
    PetscCall(CreateLoss(LOSSMSE, &loss));
    PetscCall(CreateBatch(4, 2, &Y));
    PetscCall(CreateBatch(4, 1, &T));
  }
  PetscCall(PetscStrcmp(name, "target_size_crossentropy", &match));
  if (match) { /* output 4 x 2 = 8 entries, target with 3 labels: not one label per sample */
    PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
    PetscCall(CreateBatch(4, 2, &Y));
    PetscCall(CreateBatch(3, 1, &T));
  }
  PetscCall(PetscStrcmp(name, "target_split", &match));
  if (match) { /* 4 samples of 2 entries split 2/2 over two ranks (or 4 on one), all 4 labels on the first rank */
    PetscMPIInt rank;

    PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
    PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
    PetscCall(CreateBatch(4, 2, &Y));
    PetscCall(VecCreateMPI(PETSC_COMM_WORLD, rank ? 0 : 4, 4, &T));
  }
  PetscCall(PetscStrcmp(name, "gradient_aliased", &match));
  if (match) { /* the gradient asked for in the output Vec itself */
    PetscCall(CreateLoss(LOSSCROSSENTROPY, &loss));
    PetscCall(CreateBatch(4, 2, &Y));
    PetscCall(CreateBatch(4, 1, &T));
  }
  PetscCheck(loss, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "Unknown -case %s: use label_range, label_fraction, target_size_mse, target_size_crossentropy, target_split or gradient_aliased", name);
  PetscCall(FillFromTable(Y, y));
  PetscCall(FillFromTable(T, t));
  PetscCall(LossEvaluate(loss, Y, T, &f, match ? Y : NULL));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&T));
  PetscCall(LossDestroy(&loss));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      name[64] = "";
  PetscBool flg, tokens = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-case", name, sizeof(name), &flg));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-tokens", &tokens, NULL));
  if (tokens)
    PetscCall(TestTokens(5, 4, 7));
  else if (flg)
    PetscCall(RunErrorCase(name));
  else {
    PetscCall(TestCrossEntropyByHand(1));
    PetscCall(TestCrossEntropyByHand(5));
    PetscCall(TestCrossEntropyStable());
    PetscCall(TestRegressionByHand());
    PetscCall(TestFiniteDifferences(LOSSCROSSENTROPY, 7, 5));
    PetscCall(TestFiniteDifferences(LOSSMSE, 7, 3));
    PetscCall(TestFiniteDifferences(LOSSL1, 7, 3));
    PetscCall(TestCountCorrect());
  }
  PetscCall(PetscFinalize());
  return 0;
}
