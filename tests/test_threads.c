/*
  Results do not depend on the number of threads (-net_threads, PetNetSetNumThreads()): the same bits at 1, 2 and 3
  threads (3: parts that do not divide evenly among the threads).

  Layers (default): for each Net below, a fresh Net (same seed, so the same parameters, dropout masks and batch-norm
  statistics) at each thread count, in training mode, on the same batch of n samples: forward Y, backward (dX and the
  gradient G), jvp (dY along random dX and dtheta), and the second-order backward (dXdot and Hv) where every layer has
  one. Every entry at 2 and 3 threads must equal the one at 1 thread; prints the largest difference (0).
    -threads_batch n    samples in the batch (default 20: 8 parts of whole samples in the convolutions; the MLP
                        takes 32 n)
    -threads_max t      compare 2, ..., t threads with 1 (default 3)
  The chunking of the convolutions comes from the options (e.g. -layer0_conv2d_max_workspace 1e-3: chunks of part of a
  sample).

  Grid mode (-threads_grid): the same comparisons for Nets of conv2d layers on a 2-D DMDA (NetDMDASetUp(); the input
  a field, each rank's box convolved by a batch-mode copy of the layer, src/net/netspatial.c), with each conv2d
  algorithm (-layer<l>_conv2d_algorithm) on the box, one large sample. At 1 thread NetTestJacobian() checks them
  (dot products <= 1e-12, finite differences <= 1e-6: a part left out of the weight-gradient sum fails it).
    -threads_grid_size M,N   the grid (default 32,35: 4 parts of 8 or 9 rows on one rank)

  Fusion (netfuse.c, with -threads_fuse): the same Nets also run with every pass on its own (NetSetFusion(net, PETSC_FALSE)) at 1 thread;
  the fused results at every thread count must agree with them to 1e-13 relative (they are the same operations: in
  practice the same bits), and at 1 thread NetTestJacobian() checks the fused Net's Jacobians (dot-product errors
  <= 1e-12; the finite differences, which cross kinks of relu and maxpool on random inputs, no worse than unfused).
    -threads_fuse        run these comparisons (default: only the thread counts, the Nets fused as by default)

  Thin GEMMs (-threads_thin): Nets of dense layers on batches of 1 to 65 samples, whose double GEMMs of at most 64
  columns run on PetNet's thin AVX-512 kernels (LayerSetGemmThinRows(), src/layers/interface/layergemmthin.c): their
  results at 2 and 3 threads must be the same bits as at 1, and within 1e-13 relative of BLAS's (rows 0) in every
  result; where the CPU has AVX-512, at least one result must differ from BLAS's bits (else the kernels did not run:
  the test would compare BLAS with itself). The layers' sizes reach every tail: inner chunks of 256 (forward) and 128
  (input gradient) and a part of one, output rows not a multiple of 16, 6, 12 or 16, batches of 1, 8, 9, 16, 17, 33, 64.

  Training (-threads_train): train the Net of the options (-net_layers, -tao_type, -trainer_batch_size, ...) on the
  first -train_dataset_limit images of the Fashion-MNIST test split at 1 and at 2 threads; the final parameters, the
  training loss and the test accuracy must be the same bits. With -threads_fuse also with separate passes at 1
  thread: parameters and loss within 1e-13 relative, the same accuracy.
*/
#include <petnet.h>
#include <petnetdmda.h>

/* the Nets, their input shapes and a factor on the batch: the MLP's 32 n samples cut its GEMMs, activations and batch
   statistics into several parts (each part needs some work: see dense.c, pointwise.h, batchnorm.c), and the last
   Net's 16 n its pooling, upsampling and transposed convolution */
static const struct {
  const char *spec, *shape;
  PetscInt    batchfactor;
} Nets[] = {
    {"conv2d:8:3:1:1,batchnorm,relu,maxpool:2,conv2d:16:3:1:1,batchnorm,relu,maxpool:2,flatten,dropout:0.3,dense:32,relu,dense:10", "28x28x1", 1},
    {"conv2d:6:3:2:1,conv2d:6:1,tanh,conv2d:4:3:1:0:groups=2,relu,flatten,dense:5", "12x12x3", 1},
    {"conv3d:4:3:1:1,relu,maxpool:2,flatten,dense:5", "6x6x6x2", 1},
    {"dense:128,relu,batchnorm,dense:48,tanh,dense:10", "784", 32},
    {"conv2d:4:3:1:1,avgpool:2,upsample:2:linear,convtranspose2d:3:2:2:0,relu,upsample:2,avgpool:4,flatten,dense:5", "12x12x2", 16},
    {"dense:16,relu,residual(dense:16,relu,dense:16),relu,dense:16,relu,dense:4", "8", 4},
    {"conv2d:4:3:1:1,relu,residual(conv2d:4:3:1:1,batchnorm,relu,conv2d:4:3:1:1),relu,maxpool:2,flatten,dense:5", "8x8x2", 1},
};

/* grid mode: Nets whose conv2d layers run on the DMDA (odd kernels, padding K/2), on fields of GridDof channels */
static const char *const GridNets[] = {
    "conv2d:5:3:1:1,tanh,conv2d:3:5x3:1:2x1:bias=0",
    "conv2d:4:3:1:1,tanh,conv2d:4:3:1:1,dense:3,tanh,conv2d:2:1:1:0",
};
#define GridDof 3
static const char *GridAlgorithm; /* -layer<l>_conv2d_algorithm of every layer of a grid-mode Net */

/* the largest |a - b| over the entries (0 when both are NULL) */
static PetscErrorCode MaxDifference(Vec a, Vec b, PetscReal *diff)
{
  Vec d;

  PetscFunctionBegin;
  *diff = 0;
  if (!a) PetscFunctionReturn(0);
  PetscCall(VecDuplicate(a, &d));
  PetscCall(VecWAXPY(d, -1.0, a, b));
  PetscCall(VecNorm(d, NORM_INFINITY, diff));
  PetscCall(VecDestroy(&d));
  PetscFunctionReturn(0);
}

/* Vecs the derivatives of one Net at one thread count */
#define NRESULTS 7
static const char *const ResultNames[NRESULTS] = {"Y", "dX", "G", "dY (jvp)", "dXdot", "Hv", "params"};

static PetscErrorCode RandomVec(Vec v, PetscRandom rnd)
{
  PetscFunctionBegin;
  PetscCall(VecSetRandom(v, rnd));
  PetscCall(VecShift(v, -0.5));
  PetscFunctionReturn(0);
}

/* a fresh Net from spec at nthreads threads, fused or not: the results of forward, backward, jvp and the second-order
   backward; with test, also its Jacobian test's worst errors (dot-product, finite differences). With a DMDA da (shape
   and n unused) the Net runs in grid mode on one field of da. */
static PetscErrorCode LayerResults(const char *spec, const char *shape, PetscInt n, DM da, PetscInt nthreads, PetscBool fuse, Vec res[NRESULTS], PetscReal *doterr, PetscReal *fderr)
{
  MPI_Comm    comm = PETSC_COMM_WORLD;
  Net         net;
  PetNetShape in;
  PetscRandom rnd;
  Vec         X, dY, dXt, dth, theta;
  PetscBool   so;
  PetscInt    first;

  PetscFunctionBegin;
  PetscCall(PetNetSetNumThreads(nthreads));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, spec));
  if (!da) {
    PetscCall(PetNetShapeFromString(shape, &in));
    PetscCall(NetSetInputShape(net, &in));
  }
  PetscCall(NetSetSeed(net, 7));
  if (da) {
    PetscInt nl;

    PetscCall(NetGetNumLayers(net, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      char key[64];

      PetscCall(PetscSNPrintf(key, sizeof(key), "-layer%" PetscInt_FMT "_conv2d_algorithm", l));
      PetscCall(PetscOptionsSetValue(NULL, key, GridAlgorithm));
    }
  }
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetFusion(net, fuse));
  PetscCall(NetSetTraining(net, PETSC_TRUE));
  if (da) {
    PetscInt xm, ym;

    PetscCall(NetDMDASetUp(net, da));
    PetscCall(DMDAGetCorners(da, NULL, NULL, NULL, &xm, &ym, NULL));
    n = xm * ym; /* a field: this rank's points of the DMDA */
  } else
    PetscCall(NetSetUp(net));
  PetscCall(PetscRandomCreate(comm, &rnd));
  PetscCall(PetscRandomSetSeed(rnd, 3));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(NetCreateVecs(net, n, &X, &res[0]));
  PetscCall(RandomVec(X, rnd));
  PetscCall(NetForward(net, X, res[0]));
  PetscCall(VecDuplicate(res[0], &dY));
  PetscCall(RandomVec(dY, rnd));
  PetscCall(VecDuplicate(X, &res[1]));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, &res[2]));
  PetscCall(VecZeroEntries(res[2]));
  PetscCall(NetBackward(net, dY, res[1], res[2]));
  PetscCall(VecDuplicate(X, &dXt));
  PetscCall(RandomVec(dXt, rnd));
  PetscCall(VecDuplicate(theta, &dth));
  PetscCall(RandomVec(dth, rnd));
  PetscCall(VecDuplicate(res[0], &res[3]));
  PetscCall(NetJVP(net, dXt, dth, res[3]));
  PetscCall(NetHasSecondOrder(net, &so, &first));
  if (so) {
    PetscCall(VecDuplicate(X, &res[4]));
    PetscCall(VecDuplicate(theta, &res[5]));
    PetscCall(VecZeroEntries(res[5]));
    PetscCall(NetSecondOrderBackward(net, dY, NULL, res[4], res[5]));
  } else
    res[4] = res[5] = NULL;
  PetscCall(VecDuplicate(theta, &res[6]));
  PetscCall(VecCopy(theta, res[6]));
  if (doterr) {
    PetscViewer quiet; /* the errors are asserted by the caller; the table would only repeat them */

    PetscCall(PetscViewerASCIIOpen(comm, "/dev/null", &quiet));
    PetscCall(NetTestJacobian(net, X, quiet, doterr, fderr));
    PetscCall(PetscViewerDestroy(&quiet));
  }
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&dY));
  PetscCall(VecDestroy(&dXt));
  PetscCall(VecDestroy(&dth));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(NetDestroy(&net));
  PetscFunctionReturn(0);
}

/* |a - b|_inf / |a|_inf (0 when both are NULL or zero) */
static PetscErrorCode RelativeDifference(Vec a, Vec b, PetscReal *rel)
{
  PetscReal d, norm = 0;

  PetscFunctionBegin;
  PetscCall(MaxDifference(a, b, &d));
  if (a) PetscCall(VecNorm(a, NORM_INFINITY, &norm));
  *rel = norm > 0 ? d / norm : d;
  PetscFunctionReturn(0);
}

static PetscErrorCode TestLayers(PetscInt n, PetscInt tmax, PetscBool fusecmp)
{
  PetscFunctionBegin;
  for (size_t k = 0; k < sizeof(Nets) / sizeof(Nets[0]); k++) {
    Vec       ref[NRESULTS], other[NRESULTS], sep[NRESULTS];
    PetscReal worst = 0, fused = 0, doterr = 0, fderr = 0, sdoterr = 0, sfderr = 0;

    const PetscInt ns = n * Nets[k].batchfactor;

    /* every pass on its own against the fused passes (at every thread count below) */
    PetscCall(LayerResults(Nets[k].spec, Nets[k].shape, ns, NULL, 1, PETSC_TRUE, ref, fusecmp ? &doterr : NULL, &fderr));
    if (fusecmp)
      PetscCall(LayerResults(Nets[k].spec, Nets[k].shape, ns, NULL, 1, PETSC_FALSE, sep, &sdoterr, &sfderr));
    else
      for (PetscInt r = 0; r < NRESULTS; r++) sep[r] = NULL;
    /* the dot-product tests hold exactly; the finite differences cross the kinks of relu and maxpool on these random
       inputs (errors up to 1e-2), and must find the fused Net no worse than the separate one */
    PetscCheck(doterr <= 1e-12 && fderr <= PetscMax(1e-6, sfderr * (1 + 1e-6)), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on %s, fused: Jacobian test errors %g (dot product, <= 1e-12) and %g (finite differences; separate passes: %g)", Nets[k].spec,
               Nets[k].shape, (double)doterr, (double)fderr, (double)sfderr);
    for (PetscInt r = 0; r < NRESULTS; r++) {
      PetscReal d;

      PetscCall(RelativeDifference(sep[r], ref[r], &d));
      PetscCheck(d <= 1e-13, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on %s: %s fused differs from separate passes by %g relative", Nets[k].spec, Nets[k].shape, ResultNames[r], (double)d);
      fused = PetscMax(fused, d);
    }
    for (PetscInt t = 2; t <= tmax; t++) {
      PetscCall(LayerResults(Nets[k].spec, Nets[k].shape, ns, NULL, t, PETSC_TRUE, other, NULL, NULL));
      for (PetscInt r = 0; r < NRESULTS; r++) {
        PetscReal d;

        PetscCall(MaxDifference(ref[r], other[r], &d));
        PetscCheck(d == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on %s: %s at %" PetscInt_FMT " threads differs from 1 thread by %g", Nets[k].spec, Nets[k].shape, ResultNames[r], t, (double)d);
        worst = PetscMax(worst, d);
        PetscCall(VecDestroy(&other[r]));
      }
    }
    for (PetscInt r = 0; r < NRESULTS; r++) {
      PetscCall(VecDestroy(&ref[r]));
      PetscCall(VecDestroy(&sep[r]));
    }
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s (%s, %" PetscInt_FMT " samples): forward, backward, jvp, second order at 2 to %" PetscInt_FMT " threads against 1: max difference %g\n", Nets[k].spec, Nets[k].shape, ns, tmax, (double)worst));
    if (fusecmp)
      PetscCall(
          PetscPrintf(PETSC_COMM_WORLD, "  fused against separate passes: max relative difference %g; Jacobian test fused: dot product %.0e, finite differences %.1e (separate: %.1e)\n", (double)fused, (double)doterr, (double)fderr, (double)sfderr));
  }
  PetscFunctionReturn(0);
}

/* grid mode: each Net of GridNets on an M x N DMDA with each grid algorithm, at 2 .. tmax threads against 1 */
static PetscErrorCode TestGrid(PetscInt M, PetscInt N, PetscInt tmax)
{
  const char *const algorithms[] = {"im2col", "winograd", "taps"};
  DM                da;

  PetscFunctionBegin;
  PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, M, N, PETSC_DECIDE, PETSC_DECIDE, GridDof, 1, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  for (size_t k = 0; k < sizeof(GridNets) / sizeof(GridNets[0]); k++) {
    for (size_t a = 0; a < sizeof(algorithms) / sizeof(algorithms[0]); a++) {
      Vec       ref[NRESULTS], other[NRESULTS];
      PetscReal worst = 0, doterr, fderr;

      GridAlgorithm = algorithms[a];
      PetscCall(LayerResults(GridNets[k], NULL, 0, da, 1, PETSC_TRUE, ref, &doterr, &fderr));
      /* the kernels' parts (the weight gradients summed over them) are right */
      PetscCheck(doterr <= 1e-12 && fderr <= 1e-6, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on a %" PetscInt_FMT " x %" PetscInt_FMT " DMDA (%s): Jacobian test errors %g (dot product, <= 1e-12) and %g (finite differences, <= 1e-6)", GridNets[k], M, N,
                 algorithms[a], (double)doterr, (double)fderr);
      for (PetscInt t = 2; t <= tmax; t++) {
        PetscCall(LayerResults(GridNets[k], NULL, 0, da, t, PETSC_TRUE, other, NULL, NULL));
        for (PetscInt r = 0; r < NRESULTS; r++) {
          PetscReal d;

          PetscCall(MaxDifference(ref[r], other[r], &d));
          PetscCheck(d == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on a %" PetscInt_FMT " x %" PetscInt_FMT " DMDA (%s): %s at %" PetscInt_FMT " threads differs from 1 thread by %g", GridNets[k], M, N, algorithms[a], ResultNames[r], t, (double)d);
          worst = PetscMax(worst, d);
          PetscCall(VecDestroy(&other[r]));
        }
      }
      for (PetscInt r = 0; r < NRESULTS; r++) PetscCall(VecDestroy(&ref[r]));
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s on a %" PetscInt_FMT " x %" PetscInt_FMT " DMDA (%s): Jacobian ok; forward, backward, jvp, second order at 2 to %" PetscInt_FMT " threads against 1: max difference %g\n", GridNets[k], M, N,
                            algorithms[a], tmax, (double)worst));
    }
  }
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

/* train the Net of the options on the test split's first images at nthreads threads: parameters, loss and accuracy */
static PetscErrorCode TrainResults(PetscInt nthreads, PetscBool fuse, Vec *params, PetscReal *trainloss, PetscReal *testacc)
{
  MPI_Comm  comm = PETSC_COMM_WORLD;
  Dataset   train, test;
  Net       net;
  Loss      loss;
  Trainer   trainer;
  Vec       theta;
  PetscInt  epochs;
  PetscReal testloss, seconds;
  char      images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN];

  PetscFunctionBegin;
  PetscCall(PetNetSetNumThreads(nthreads));
  PetscCall(PetscSNPrintf(images, sizeof(images), "%s/t10k-images-idx3-ubyte.gz", "/usr/share/datasets/fashion-mnist"));
  PetscCall(PetscSNPrintf(labels, sizeof(labels), "%s/t10k-labels-idx1-ubyte.gz", "/usr/share/datasets/fashion-mnist"));
  PetscCall(DatasetCreate(comm, &train));
  PetscCall(DatasetSetOptionsPrefix(train, "train_"));
  PetscCall(DatasetSetType(train, DATASETIDX));
  PetscCall(DatasetIDXSetFiles(train, images, labels));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetSetFromOptions(train));
  PetscCall(DatasetCreate(comm, &test));
  PetscCall(DatasetSetOptionsPrefix(test, "test_"));
  PetscCall(DatasetSetType(test, DATASETIDX));
  PetscCall(DatasetIDXSetFiles(test, images, labels));
  PetscCall(DatasetSetFromOptions(test));
  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetFromOptions(net));
  PetscCall(NetSetFusion(net, fuse));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss));
  PetscCall(TrainerCreate(comm, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetDatasets(trainer, train, test));
  PetscCall(TrainerSetFromOptions(trainer));
  PetscCall(TrainerTrain(trainer));
  PetscCall(TrainerGetResults(trainer, &epochs, trainloss, &testloss, testacc, &seconds));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecDuplicate(theta, params));
  PetscCall(VecCopy(theta, *params));
  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestTraining(PetscBool fusecmp)
{
  Vec       p1, p2, ps;
  PetscReal l1, l2, ls, a1, a2, as, d, norm;

  PetscFunctionBegin;
  PetscCall(TrainResults(1, PETSC_TRUE, &p1, &l1, &a1));
  PetscCall(TrainResults(2, PETSC_TRUE, &p2, &l2, &a2));
  if (fusecmp) {
    PetscCall(TrainResults(1, PETSC_FALSE, &ps, &ls, &as)); /* every pass on its own */
    PetscCall(RelativeDifference(ps, p1, &d));
    PetscCheck(d <= 1e-13 && PetscAbsReal(ls - l1) <= 1e-13 * PetscAbsReal(ls) && as == a1, PETSC_COMM_WORLD, PETSC_ERR_PLIB,
               "training with fused passes differs from separate ones: parameters by %g relative, loss %.17g against %.17g, accuracy %.17g against %.17g", (double)d, (double)l1, (double)ls, (double)a1, (double)as);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "training fused against separate passes at 1 thread: parameters differ by %g relative\n", (double)d));
    PetscCall(VecDestroy(&ps));
  }
  PetscCall(MaxDifference(p1, p2, &d));
  PetscCall(VecNorm(p1, NORM_INFINITY, &norm));
  PetscCheck(d == 0 && l1 == l2 && a1 == a2, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "training at 2 threads differs from 1 thread: parameters by %g, loss %.17g against %.17g, accuracy %.17g against %.17g", (double)d, (double)l1, (double)l2, (double)a1,
             (double)a2);
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "training at 1 and 2 threads: train_loss %.6f and %.6f, test_accuracy %.4f and %.4f, parameters (max %.3f) differ by at most %g\n", (double)l1, (double)l2, (double)a1, (double)a2, (double)norm, (double)d));
  PetscCall(VecDestroy(&p1));
  PetscCall(VecDestroy(&p2));
  PetscFunctionReturn(0);
}

static PetscErrorCode TestThin(PetscInt tmax)
{
  const char *const nets[]    = {"dense:130,tanh,dense:23,relu,dense:300", "dense:17,sigmoid,dense:64,tanh,dense:16", "dense:2048,relu,dense:96"};
  const char *const shapes[]  = {"513", "40", "700"};
  const PetscInt    batches[] = {1, 5, 8, 9, 16, 17, 32, 33, 64, 65};
  PetscInt          rows0;
  PetscBool         avx512 = PETSC_FALSE, differs = PETSC_FALSE;
  PetscReal         worst = 0, worstthreads = 0;
  const char       *features;

  PetscFunctionBegin;
  PetscCall(PetNetGetCPUFeatures(&features));
  PetscCall(PetscStrInList("avx512f", features, ' ', &avx512));
  PetscCall(LayerGetGemmThinRows(&rows0));
  PetscCheck(rows0 == 64, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the thin GEMMs' default rows is 64, not %" PetscInt_FMT, rows0);
  for (size_t k = 0; k < PETSC_STATIC_ARRAY_LENGTH(nets); k++) {
    for (size_t b = 0; b < PETSC_STATIC_ARRAY_LENGTH(batches); b++) {
      const PetscInt n = batches[b];
      Vec            thin[NRESULTS], blas[NRESULTS];
      PetscReal      rel[NRESULTS] = {0}, worstb = 0;

      if (k == 2 && batches[b] != 32 && batches[b] != 9) continue; /* the wide Net: two batches */
      PetscCall(LayerSetGemmThinRows(0));
      PetscCall(LayerResults(nets[k], shapes[k], n, NULL, 1, PETSC_TRUE, blas, NULL, NULL));
      PetscCall(LayerSetGemmThinRows(64));
      PetscCall(LayerResults(nets[k], shapes[k], n, NULL, 1, PETSC_TRUE, thin, NULL, NULL));
      for (PetscInt r = 0; r < NRESULTS; r++) {
        PetscReal d;

        PetscCall(RelativeDifference(blas[r], thin[r], &rel[r]));
        PetscCall(MaxDifference(blas[r], thin[r], &d));
        if (d > 0) differs = PETSC_TRUE;
        worstb = PetscMax(worstb, rel[r]);
      }
      for (PetscInt t = 2; t <= tmax; t++) {
        Vec other[NRESULTS];

        PetscCall(LayerResults(nets[k], shapes[k], n, NULL, t, PETSC_TRUE, other, NULL, NULL));
        for (PetscInt r = 0; r < NRESULTS; r++) {
          PetscReal d;

          PetscCall(MaxDifference(thin[r], other[r], &d));
          worstthreads = PetscMax(worstthreads, d);
          PetscCheck(d == 0, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on %" PetscInt_FMT " samples: %s at %" PetscInt_FMT " threads differs from 1 thread's by %g on the thin GEMMs", nets[k], n, ResultNames[r], t, (double)d);
          PetscCall(VecDestroy(&other[r]));
        }
      }
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-40s n %3" PetscInt_FMT "  thin against BLAS: Y %.1e dX %.1e G %.1e jvp %.1e dXdot %.1e Hv %.1e\n", nets[k], n, (double)rel[0], (double)rel[1], (double)rel[2], (double)rel[3], (double)rel[4],
                            (double)rel[5]));
      PetscCheck(worstb <= 1e-13, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s on %" PetscInt_FMT " samples: the thin GEMMs' results differ from BLAS's by %g relative (more than 1e-13)", nets[k], n, (double)worstb);
      worst = PetscMax(worst, worstb);
      for (PetscInt r = 0; r < NRESULTS; r++) {
        PetscCall(VecDestroy(&thin[r]));
        PetscCall(VecDestroy(&blas[r]));
      }
    }
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "thin GEMMs: at most %.1e relative from BLAS, threads %g; AVX-512 %s, some bits unlike BLAS's %s\n", (double)worst, (double)worstthreads, avx512 ? "yes" : "no", differs ? "yes" : "no"));
  PetscCheck(!avx512 || differs, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the CPU has AVX-512 but every result equals BLAS's bits: the thin GEMMs did not run");
  PetscCheck(avx512 || !differs, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "the CPU has no AVX-512 but results differ from BLAS's: something other than BLAS ran");
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscInt  n = 20, tmax = 3, grid[2] = {32, 35}, ngrid = 2;
  PetscBool train = PETSC_FALSE, fusecmp = PETSC_FALSE, gridmode = PETSC_FALSE, thin = PETSC_FALSE, flg;

  PetscFunctionBeginUser;
  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-threads_batch", &n, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-threads_max", &tmax, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-threads_train", &train, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-threads_fuse", &fusecmp, NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-threads_grid", &gridmode, NULL));
  PetscCall(PetscOptionsGetIntArray(NULL, NULL, "-threads_grid_size", grid, &ngrid, &flg));
  if (flg && ngrid == 1) grid[1] = grid[0];
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-threads_thin", &thin, NULL));
  if (thin)
    PetscCall(TestThin(tmax));
  else if (gridmode)
    PetscCall(TestGrid(grid[0], grid[1], tmax));
  else if (train)
    PetscCall(TestTraining(fusecmp));
  else
    PetscCall(TestLayers(n, tmax, fusecmp));
  PetscCall(PetscFinalize());
  return 0;
}
