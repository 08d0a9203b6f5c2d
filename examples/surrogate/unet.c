/*
  bin/surrogate -surrogate_model unet: a U-Net surrogate of the KSP solve on a distributed 2-D field.

  Spatial parallelism: every field (input and solution) lives on an n x n DMDA split over all ranks. The KSP solves
  on it (problem.c, the solver's DMDA) and the Net runs on it in grid mode (NetSetGrid(), a DMDA with the solver's
  ownership and dof = the input channels), so a rank holds its block of every field and of every feature map, and a
  mini-batch of nf fields is [nf][block points][channels] on each rank (the same nf fields on every rank). Sample s
  is drawn from seed s alone and its solution does not depend on the decomposition (to the KSP tolerance): the
  training sees the same fields in the same order on any number of ranks.

  The U-Net (the default -net_graph below, total stride 32, 71,721 parameters): a 3x3 convolution to 8 channels at
  full resolution (the skip kept for the output), a 4x4 stride-4 convolution down to n/4 (16 channels), then three
  stride-2 convolutions down to n/32 (16, 32, 32 channels), each level one 3x3 convolution more; back up by linear
  upsampling, each level concatenating the skip of its resolution (skip first: the output keeps the input's
  ownership) and convolving; tanh after every convolution but the last. The fields are smooth (a few sine modes), so
  the full-resolution work is one convolution each way and the rest happens on the coarse grids. Measured while
  choosing it (the coefficient problem; some runs in a PyTorch copy of the network): a mini-batch of 2 learns more
  per field seen than one of 4 or 8; wider (64-channel) or dilated bottlenecks, more levels (down to 2 x 2), relu or
  gelu, batchnorm (on 64 x 64), coordinate channels and centring the targets on their mean field gave nothing
  consistent at this budget; halving the widths of the middle levels made an iteration cheaper and did not hurt.
  The error is set by the number of fields seen: about 3,000 for 2e-2 on 64 x 64, about 16,000 on 256 x 256, where
  the coarse levels span the domain later.

  The output is u on the output grid (NetCreateOutputLayout()); the targets are moved there from the solver's DMDA
  once (PetNetRedistributeCreate(): the identity when the ownership is the same). Training: MSE over every grid point
  of the mini-batch, adam with a cosine decay, one TAO iteration per mini-batch (the TaoSetUpdate hook draws it from a
  seeded shuffle of the training fields, the same on every rank).
*/
#include <petnet.h>
#include "unet.h"

/* tanh after every convolution but the last; names: e = encoder, d = down-sampling, u = upsampling, c = concat, f = decoder */
static const char UNetGraph[] = "e0=conv2d:8:3:1:1;a0=tanh;"
                                "d1=conv2d:16:4:4:0;a1=tanh;e1=conv2d:16:3:1:1;b1=tanh;"
                                "d2=conv2d:16:3:2:1;a2=tanh;e2=conv2d:16:3:1:1;b2=tanh;"
                                "d3=conv2d:32:3:2:1;a3=tanh;e3=conv2d:32:3:1:1;b3=tanh;"
                                "d4=conv2d:32:3:2:1;a4=tanh;e4=conv2d:32:3:1:1;b4=tanh;"
                                "u3=upsample:2:linear;c3=concat<-b3,u3;f3=conv2d:32:3:1:1;g3=tanh;"
                                "u2=upsample:2:linear;c2=concat<-b2,u2;f2=conv2d:16:3:1:1;g2=tanh;"
                                "u1=upsample:2:linear;c1=concat<-b1,u1;f1=conv2d:16:3:1:1;g1=tanh;"
                                "u0=upsample:4:linear;c0=concat<-a0,u0;out=conv2d:1:3:1:1";

typedef struct {
  const SurrogateUNetOptions *opt;
  MPI_Comm                    comm; /* the Net's (all ranks, one spatial group) */
  Net                         net;
  Loss                        loss;
  PetscInt                    cin;     /* input channels: the field, and x, y with -surrogate_coordinates */
  PetscInt                    npts;    /* points of this rank's input block */
  PetscInt                    nout;    /* points of this rank's output block */
  PetscScalar                *x[2];    /* training (0) and held-out (1) inputs: [N][npts], the field only */
  PetscScalar                *t[2];    /* ... targets: [N][nout] */
  PetscScalar                *coord;   /* [npts][2]: x and y of the block's points, in [-1, 1] */
  Vec                         X, T, Y; /* a batch of nb fields */
  Vec                         dY;
  PetscInt                    nb;
  PetscInt                   *perm, nbatches; /* this epoch's order of the training fields; batches per epoch */
  PetscRandom                 rnd;
  PetscReal                   epochloss; /* sum of the epoch's mini-batch losses so far */
  PetscInt                    epochcount;
} UNet;

/* X, T, Y, dY for batches of nb fields */
static PetscErrorCode UNetSetBatchSize(UNet *u, PetscInt nb)
{
  PetscInt m;

  PetscFunctionBegin;
  if (u->nb == nb) PetscFunctionReturn(0);
  PetscCall(VecDestroy(&u->X));
  PetscCall(VecDestroy(&u->T));
  PetscCall(VecDestroy(&u->Y));
  PetscCall(VecDestroy(&u->dY));
  PetscCall(VecCreateMPI(u->comm, nb * u->npts * u->cin, PETSC_DETERMINE, &u->X));
  PetscCall(VecCreateMPI(u->comm, nb * u->nout, PETSC_DETERMINE, &u->T));
  PetscCall(NetCreateVecs(u->net, nb * u->npts, NULL, &u->Y));
  PetscCall(VecGetLocalSize(u->Y, &m));
  PetscCheck(m == nb * u->nout, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The Net's output block has %" PetscInt_FMT " entries, not %" PetscInt_FMT, m, nb * u->nout);
  PetscCall(VecDuplicate(u->Y, &u->dY));
  u->nb = nb;
  PetscFunctionReturn(0);
}

/* X, T <- the fields idx[0..nb-1] of set (0 training, 1 held-out) */
static PetscErrorCode UNetLoadBatch(UNet *u, PetscInt set, PetscInt nb, const PetscInt idx[])
{
  PetscScalar *x, *t;

  PetscFunctionBegin;
  PetscCall(UNetSetBatchSize(u, nb));
  PetscCall(VecGetArrayWrite(u->X, &x));
  PetscCall(VecGetArrayWrite(u->T, &t));
  for (PetscInt f = 0; f < nb; f++) {
    const PetscScalar *xs = u->x[set] + (size_t)idx[f] * u->npts;

    for (PetscInt p = 0; p < u->npts; p++) {
      x[(f * u->npts + p) * u->cin] = xs[p];
      if (u->cin == 3) {
        x[(f * u->npts + p) * 3 + 1] = u->coord[2 * p];
        x[(f * u->npts + p) * 3 + 2] = u->coord[2 * p + 1];
      }
    }
    PetscCall(PetscArraycpy(t + f * u->nout, u->t[set] + (size_t)idx[f] * u->nout, u->nout));
  }
  PetscCall(VecRestoreArrayWrite(u->T, &t));
  PetscCall(VecRestoreArrayWrite(u->X, &x));
  PetscFunctionReturn(0);
}

/* Over the N fields of set (0 training, 1 held-out), in batches of at most nf: the mean squared error over all points
   (*mse), the mean over the fields of |y - t| / |t| (*relerr), and the time of the forward passes (*seconds) */
static PetscErrorCode UNetEvaluate(UNet *u, PetscInt set, PetscReal *mse, PetscReal *relerr, PetscLogDouble *seconds)
{
  const PetscInt N = set ? u->opt->Ntest : u->opt->Ntrain, nf = u->opt->nf;
  PetscInt      *idx;
  PetscReal     *sums;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  *mse = *relerr = 0;
  *seconds       = 0;
  PetscCall(PetscMalloc2(nf, &idx, 2 * nf, &sums));
  PetscCall(NetSetTraining(u->net, PETSC_FALSE));
  for (PetscInt first = 0; first < N; first += nf) {
    const PetscInt     nb = PetscMin(nf, N - first);
    const PetscScalar *y, *t;

    for (PetscInt f = 0; f < nb; f++) idx[f] = first + f;
    PetscCall(UNetLoadBatch(u, set, nb, idx));
    PetscCallMPI(MPI_Barrier(u->comm));
    PetscCall(PetscTime(&t0));
    PetscCall(NetForward(u->net, u->X, u->Y));
    PetscCallMPI(MPI_Barrier(u->comm));
    PetscCall(PetscTime(&t1));
    *seconds += t1 - t0;
    PetscCall(VecGetArrayRead(u->Y, &y));
    PetscCall(VecGetArrayRead(u->T, &t));
    for (PetscInt f = 0; f < nb; f++) {
      sums[2 * f] = sums[2 * f + 1] = 0;
      for (PetscInt p = f * u->nout; p < (f + 1) * u->nout; p++) {
        sums[2 * f] += PetscSqr(PetscRealPart(y[p] - t[p]));
        sums[2 * f + 1] += PetscSqr(PetscRealPart(t[p]));
      }
    }
    PetscCall(VecRestoreArrayRead(u->T, &t));
    PetscCall(VecRestoreArrayRead(u->Y, &y));
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 2 * nb, MPIU_REAL, MPIU_SUM, u->comm));
    for (PetscInt f = 0; f < nb; f++) {
      *mse += sums[2 * f];
      *relerr += PetscSqrtReal(sums[2 * f] / sums[2 * f + 1]);
    }
  }
  PetscCall(NetSetTraining(u->net, PETSC_TRUE));
  *mse /= (PetscReal)N * u->opt->n * u->opt->n;
  *relerr /= N;
  PetscCall(PetscFree2(idx, sums));
  PetscFunctionReturn(0);
}

/* After epoch e (1-based): its mean mini-batch loss; with -surrogate_monitor a line with the held-out loss and error
   at the current parameters theta */
static PetscErrorCode UNetEndEpoch(UNet *u, Vec theta, PetscInt e, PetscReal *trainloss)
{
  PetscFunctionBegin;
  *trainloss    = u->epochcount ? u->epochloss / u->epochcount : 0;
  u->epochloss  = 0;
  u->epochcount = 0;
  if (u->opt->monitor) {
    PetscReal      mse, err;
    PetscLogDouble sec;

    PetscCall(NetSetParameters(u->net, theta));
    PetscCall(UNetEvaluate(u, 1, &mse, &err, &sec));
    PetscCall(PetscPrintf(u->comm, "epoch %3" PetscInt_FMT "/%" PetscInt_FMT "  train_loss %.6e  test_loss %.6e  rel_error %.6e\n", e, u->opt->epochs, (double)*trainloss, (double)mse, (double)err));
  }
  PetscFunctionReturn(0);
}

/* The TaoSetUpdate hook: before iteration it, a new shuffle at each epoch's start, then batch it % nbatches */
static PetscErrorCode UNetNextBatch(Tao tao, PetscInt it, void *ctx)
{
  UNet          *u  = (UNet *)ctx;
  const PetscInt nf = u->opt->nf, b = it % u->nbatches;

  PetscFunctionBegin;
  if (b == 0) {
    if (it > 0) {
      Vec       theta;
      PetscReal loss;

      PetscCall(TaoGetSolution(tao, &theta));
      PetscCall(UNetEndEpoch(u, theta, it / u->nbatches, &loss));
    }
    for (PetscInt i = u->opt->Ntrain - 1; i > 0; i--) { /* Fisher-Yates, the same draws on every rank */
      PetscReal r;
      PetscInt  j, s;

      PetscCall(PetscRandomGetValueReal(u->rnd, &r));
      j          = PetscMin((PetscInt)(r * (i + 1)), i);
      s          = u->perm[i];
      u->perm[i] = u->perm[j];
      u->perm[j] = s;
    }
  }
  PetscCall(UNetLoadBatch(u, 0, nf, u->perm + b * nf));
  PetscFunctionReturn(0);
}

/* f = MSE of the current mini-batch over all its grid points, G = its gradient */
static PetscErrorCode UNetObjective(Tao tao, Vec theta, PetscReal *f, Vec G, void *ctx)
{
  UNet *u = (UNet *)ctx;

  PetscFunctionBegin;
  PetscCall(NetSetParameters(u->net, theta));
  PetscCall(NetForward(u->net, u->X, u->Y));
  PetscCall(LossEvaluate(u->loss, u->Y, u->T, f, u->dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(u->net, u->dY, NULL, G));
  u->epochloss += *f;
  u->epochcount++;
  PetscFunctionReturn(0);
}

/* Glorot-uniform convolutions unless <node>_conv2d_init says otherwise (as the CNN: Kaiming's default, for deep ReLU
   classifiers, trains these regressions more slowly) */
static PetscErrorCode UNetSetInitialization(Net net)
{
  PetscInt nl;

  PetscFunctionBegin;
  PetscCall(NetGetNumLayers(net, &nl));
  for (PetscInt l = 0; l < nl; l++) {
    Layer       layer;
    const char *prefix;
    PetscBool   set;

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)layer, &prefix));
    PetscCall(PetscOptionsHasName(NULL, prefix, "-conv2d_init", &set));
    if (!set) PetscCall(LayerConv2dSetInitialization(layer, LAYER_INIT_XAVIER, 0.0));
  }
  PetscFunctionReturn(0);
}

/* The Net on the grid: the default U-Net or -net_graph, checked to map the n x n field to one channel on the n x n grid;
 *lout: the layout of one output field */
static PetscErrorCode UNetCreateNet(UNet *u, DM da, PetNetLayout *lout)
{
  const PetscInt n = u->opt->n;
  PetNetShape    out;
  PetscInt64     lo[PETNET_LAYOUT_MAX_DIM], sz[PETNET_LAYOUT_MAX_DIM], ext[2];
  char           text[64];

  PetscFunctionBegin;
  PetscCall(NetSetGrid(u->net, da));
  PetscCall(UNetSetInitialization(u->net));
  PetscCall(NetSetUp(u->net)); /* a -net_graph whose joins meet grids of different sizes is refused here, naming the node */
  PetscCall(NetGetOutputShape(u->net, &out));
  PetscCall(PetNetShapeToString(&out, sizeof(text), text));
  PetscCheck(out.ndim == 1 && out.dim[0] == 1, u->comm, PETSC_ERR_ARG_INCOMP,
             "-surrogate_model unet: the network's output is %s per grid point; it must be the solution u, one channel: end -net_graph with a conv2d to 1 channel (e.g. out=conv2d:1:3:1:1)", text);
  PetscCall(NetCreateOutputLayout(u->net, 1, lout));
  PetscCall(PetNetLayoutGetBlock(*lout, lo, sz));
  ext[0] = lo[1] + sz[1];
  ext[1] = lo[2] + sz[2];
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, ext, 2, MPIU_INT64, MPI_MAX, u->comm));
  PetscCheck(ext[0] == n && ext[1] == n, u->comm, PETSC_ERR_ARG_INCOMP,
             "-surrogate_model unet: the network maps the %" PetscInt_FMT "x%" PetscInt_FMT " grid to a %" PetscInt64_FMT "x%" PetscInt64_FMT " one; its output must be on the input's grid: upsample as much as it down-samples", n, n, ext[0], ext[1]);
  u->nout = (PetscInt)(sz[1] * sz[2]);
  PetscFunctionReturn(0);
}

/* The data: KSP solves of the training samples 0 .. Ntrain-1 and the held-out ones after them, each on the whole DMDA;
   inputs kept on the input blocks, targets moved to the output blocks. *tksp: this rank's solve time of the held-out ones */
static PetscErrorCode UNetMakeData(UNet *u, SurrogateSolver *sv, PetNetLayout lout, PetscLogDouble *tksp)
{
  PetNetLayout ldmda;
  Mat          R;
  Vec          uv, tv;
  PetscScalar *ublock;

  PetscFunctionBegin;
  PetscCall(PetNetLayoutCreateFromDMDA(sv->da, &ldmda));
  PetscCall(PetNetRedistributeCreate(ldmda, lout, &R));
  PetscCall(PetscMalloc1(u->npts, &ublock));
  PetscCall(VecCreateMPIWithArray(u->comm, 1, u->npts, PETSC_DETERMINE, NULL, &uv));
  PetscCall(VecCreateMPIWithArray(u->comm, 1, u->nout, PETSC_DETERMINE, NULL, &tv));
  PetscCall(VecPlaceArray(uv, ublock));
  for (PetscInt set = 0; set < 2; set++) {
    const PetscInt N = set ? u->opt->Ntest : u->opt->Ntrain, first = set ? u->opt->Ntrain : 0;
    PetscLogDouble seconds = 0;

    PetscCall(PetscMalloc2((size_t)N * u->npts, &u->x[set], (size_t)N * u->nout, &u->t[set]));
    for (PetscInt s = 0; s < N; s++) {
      PetscCall(SurrogateSolverSolve(sv, first + s, u->x[set] + (size_t)s * u->npts, ublock, &seconds));
      PetscCall(VecPlaceArray(tv, u->t[set] + (size_t)s * u->nout));
      PetscCall(MatMult(R, uv, tv));
      PetscCall(VecResetArray(tv));
    }
    if (set) *tksp = seconds;
  }
  PetscCall(VecResetArray(uv));
  PetscCall(VecDestroy(&uv));
  PetscCall(VecDestroy(&tv));
  PetscCall(PetscFree(ublock));
  PetscCall(MatDestroy(&R));
  PetscCall(PetNetLayoutDestroy(&ldmda));
  PetscFunctionReturn(0);
}

/* inputs and targets scaled by one constant each, the RMS over the training fields (the relative error does not depend on it) */
static PetscErrorCode UNetScaleData(UNet *u)
{
  const PetscInt  N       = u->opt->Ntrain;
  const PetscReal npoints = (PetscReal)N * u->opt->n * u->opt->n;
  PetscReal       ss[2]   = {0, 0};

  PetscFunctionBegin;
  for (size_t i = 0; i < (size_t)N * u->npts; i++) ss[0] += PetscSqr(PetscRealPart(u->x[0][i]));
  for (size_t i = 0; i < (size_t)N * u->nout; i++) ss[1] += PetscSqr(PetscRealPart(u->t[0][i]));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, ss, 2, MPIU_REAL, MPIU_SUM, u->comm));
  for (PetscInt set = 0; set < 2; set++) {
    const PetscInt M = set ? u->opt->Ntest : N;

    for (size_t i = 0; i < (size_t)M * u->npts; i++) u->x[set][i] /= PetscSqrtReal(ss[0] / npoints);
    for (size_t i = 0; i < (size_t)M * u->nout; i++) u->t[set][i] /= PetscSqrtReal(ss[1] / npoints);
  }
  PetscFunctionReturn(0);
}

/*
  SurrogateUNetRun - bin/surrogate -surrogate_model unet: data, the U-Net on the grid, training, the held-out error
  and the time per field against the KSP solve; ends with the summary: line
*/
PetscErrorCode SurrogateUNetRun(const SurrogateUNetOptions *opt)
{
  UNet            u;
  SurrogateSolver sv;
  DM              da;
  MPI_Comm        gcomm;
  PetscMPIInt     size, gsize;
  PetscBool       custom, set;
  PetNetLayout    lout;
  Tao             tao;
  TaoType         taotype;
  Vec             theta, params;
  PetscInt        nparams, its, xs, ys, xm, ym, m, p;
  const PetscInt *lx, *ly;
  PetscReal       trainloss, testloss, err, trainmse, errtrain;
  PetscLogDouble  t0, t1, tdata, ttrain, tksp, tnet, sec;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(&u, sizeof(u)));
  u.opt  = opt;
  u.comm = PETSC_COMM_WORLD;
  u.cin  = opt->coordinates ? 3 : 1;
  PetscCallMPI(MPI_Comm_size(u.comm, &size));
  PetscCheck(opt->nf >= 1 && opt->nf <= opt->Ntrain && opt->epochs >= 1, u.comm, PETSC_ERR_ARG_OUTOFRANGE, "-surrogate_batch %" PetscInt_FMT " must be 1 to -surrogate_train %" PetscInt_FMT ", and -surrogate_epochs %" PetscInt_FMT " at least 1",
             opt->nf, opt->Ntrain, opt->epochs);

  /* the Net: the default U-Net unless the options give another */
  PetscCall(NetCreate(u.comm, &u.net));
  PetscCall(NetSetGraph(u.net, UNetGraph));
  PetscCall(NetSetSeed(u.net, 1));
  PetscCall(NetSetFromOptions(u.net));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_graph", &custom));
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &set));
  custom = (PetscBool)(custom || set);
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_load", &set));
  custom = (PetscBool)(custom || set);
  PetscCheck(custom || opt->n % SURROGATE_UNET_STRIDE == 0, u.comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-surrogate_grid %" PetscInt_FMT ": the default U-Net down-samples by %d (a stride-4 and three stride-2 convolutions) and up-samples back; give a multiple of %d, or a -net_graph of your own", opt->n, SURROGATE_UNET_STRIDE,
             SURROGATE_UNET_STRIDE);
  PetscCall(NetGetSpatialComm(u.net, &gcomm));
  PetscCallMPI(MPI_Comm_size(gcomm, &gsize));
  PetscCheck(gsize == size, u.comm, PETSC_ERR_ARG_WRONG, "-surrogate_model unet spreads every field over all %d ranks: drop -net_spatial_groups", size);

  /* the grid: the solver's DMDA, and the Net's with the same ownership and the input channels as dof */
  PetscCall(SurrogateSolverCreate(gcomm, opt->problem, opt->n, opt->K, SURROGATE_UNET_PC, &sv));
  PetscCall(DMDAGetInfo(sv.da, NULL, NULL, NULL, NULL, &m, &p, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
  PetscCall(DMDAGetOwnershipRanges(sv.da, &lx, &ly, NULL));
  PetscCall(DMDACreate2d(gcomm, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_BOX, opt->n, opt->n, m, p, u.cin, 0, lx, ly, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMDAGetCorners(da, &xs, &ys, NULL, &xm, &ym, NULL));
  u.npts = xm * ym;
  PetscCall(PetscMalloc1(2 * u.npts, &u.coord));
  for (PetscInt j = 0; j < ym; j++)
    for (PetscInt i = 0; i < xm; i++) {
      u.coord[2 * (j * xm + i)]     = 2.0 * (xs + i + 1) / (opt->n + 1) - 1.0;
      u.coord[2 * (j * xm + i) + 1] = 2.0 * (ys + j + 1) / (opt->n + 1) - 1.0;
    }
  PetscCall(UNetCreateNet(&u, da, &lout));

  /* data */
  PetscCall(PetscTime(&t0));
  PetscCall(UNetMakeData(&u, &sv, lout, &tksp));
  PetscCall(UNetScaleData(&u));
  PetscCall(PetscTime(&t1));
  tdata = t1 - t0;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &tksp, 1, MPI_DOUBLE, MPI_MAX, u.comm));

  /* training: one TAO iteration per mini-batch of nf fields, epochs x (Ntrain / nf) iterations */
  PetscCall(LossCreate(u.comm, &u.loss));
  PetscCall(LossSetType(u.loss, LOSSMSE));
  PetscCall(LossSetFromOptions(u.loss));
  u.nbatches = opt->Ntrain / opt->nf;
  PetscCall(PetscMalloc1(opt->Ntrain, &u.perm));
  for (PetscInt i = 0; i < opt->Ntrain; i++) u.perm[i] = i;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &u.rnd));
  PetscCall(PetscRandomSetType(u.rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(u.rnd, 2024));
  PetscCall(PetscRandomSeed(u.rnd));
  PetscCall(NetGetParameters(u.net, &params));
  PetscCall(VecDuplicate(params, &theta));
  PetscCall(VecCopy(params, theta));
  PetscCall(TaoCreate(u.comm, &tao));
  PetscCall(TaoSetType(tao, TAOADAM));
  PetscCall(PetNetTaoSetLearningRate(tao, opt->lr));
  PetscCall(PetNetTaoSetLRSchedule(tao, PETNET_LR_COSINE));
  PetscCall(TaoSetMaximumIterations(tao, opt->epochs * u.nbatches));
  PetscCall(TaoSetSolution(tao, theta));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, UNetObjective, &u));
  PetscCall(TaoSetUpdate(tao, UNetNextBatch, &u));
  PetscCall(TaoSetFromOptions(tao));
  PetscCallMPI(MPI_Barrier(u.comm));
  PetscCall(PetscTime(&t0));
  PetscCall(TaoSolve(tao));
  PetscCallMPI(MPI_Barrier(u.comm));
  PetscCall(PetscTime(&t1));
  ttrain = t1 - t0;
  PetscCall(TaoGetIterationNumber(tao, &its));
  PetscCall(TaoGetType(tao, &taotype));
  PetscCall(UNetEndEpoch(&u, theta, (its + u.nbatches - 1) / u.nbatches, &trainloss));
  PetscCall(NetSetParameters(u.net, theta));
  PetscCall(NetGetNumParameters(u.net, &nparams));

  /* held-out and training error; the surrogate's time per field (its second pass over the held-out fields) */
  PetscCall(UNetEvaluate(&u, 1, &testloss, &err, &sec));
  PetscCall(UNetEvaluate(&u, 1, &testloss, &err, &tnet));
  PetscCall(UNetEvaluate(&u, 0, &trainmse, &errtrain, &sec));
  PetscCall(PetscPrintf(u.comm, "mean relative L2 error: held-out %.6e, training %.6e\n", (double)err, (double)errtrain));
  PetscCall(PetscPrintf(u.comm, "time per field on %d rank(s): KSP solve %.4f ms, surrogate %.4f ms (batches of %" PetscInt_FMT ")\n", size, 1e3 * tksp / opt->Ntest, 1e3 * tnet / opt->Ntest, opt->nf));
  PetscCall(PetscPrintf(u.comm,
                        "summary: model=unet problem=%s grid=%" PetscInt_FMT "x%" PetscInt_FMT " ranks=%d params=%" PetscInt_FMT " train_samples=%" PetscInt_FMT " test_samples=%" PetscInt_FMT " batch=%" PetscInt_FMT
                        " optimizer=%s epochs=%" PetscInt_FMT " iterations=%" PetscInt_FMT " train_loss=%.6e test_loss=%.6e rel_error=%.6e rel_error_train=%.6e train_time_s=%.2f data_time_s=%.2f ksp_ms_per_sample=%.4f surrogate_ms_per_sample=%.4f",
                        SurrogateProblemTypes[opt->problem], opt->n, opt->n, size, nparams, opt->Ntrain, opt->Ntest, opt->nf, taotype, (its + u.nbatches - 1) / u.nbatches, its, (double)trainloss, (double)testloss, (double)err, (double)errtrain,
                        (double)ttrain, (double)tdata, 1e3 * tksp / opt->Ntest, 1e3 * tnet / opt->Ntest));
  { /* the BLAS's kernels (issue 31): a time is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(u.comm, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&theta));
  PetscCall(PetscRandomDestroy(&u.rnd));
  PetscCall(PetscFree(u.perm));
  PetscCall(VecDestroy(&u.X));
  PetscCall(VecDestroy(&u.T));
  PetscCall(VecDestroy(&u.Y));
  PetscCall(VecDestroy(&u.dY));
  for (PetscInt set = 0; set < 2; set++) PetscCall(PetscFree2(u.x[set], u.t[set]));
  PetscCall(PetscFree(u.coord));
  PetscCall(PetNetLayoutDestroy(&lout));
  PetscCall(LossDestroy(&u.loss));
  PetscCall(NetDestroy(&u.net));
  PetscCall(DMDestroy(&da));
  PetscCall(SurrogateSolverDestroy(&sv));
  PetscFunctionReturn(0);
}
