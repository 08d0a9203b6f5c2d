/*
  Spectrum: lifecycle, options, the operator (the Net's Hessian or the user's), the batch, viewing.

  The computations live beside this file: spectrumcurvature.c (EPS, Hutchinson, stochastic Lanczos quadrature),
  spectrumnet.c (input-Jacobian and weight singular values), spectrumode.c (ode layers' stiffness).

  Every computation runs with the Net in evaluation mode (dropout off, batchnorm's running statistics), so that the
  operator is one fixed symmetric map while EPS or Lanczos applies it, and puts the Net back in its mode afterwards.
*/
#include <petnet/private/spectrumimpl.h>

/*@
  SpectrumCreate - creates a Spectrum, the analysis of a Net's spectra: curvature of the loss (top eigenvalues, trace,
  density), singular values of the input Jacobian and of the weights, stiffness of ode layers

  Collective

  Input Parameter:
. comm - the communicator (that of the Net to analyse)

  Output Parameter:
. sp - the new Spectrum: no Net, Loss or batch yet; the exact Hessian; k = 5 eigenvalues, 20 Hutchinson probes, stochastic
       Lanczos quadrature with 4 probes of 30 steps, 3 samples for the input Jacobian, seed 1, stiffness warning above 1e3

  Notes:
  SLEPc is initialized here if the program did not (SlepcInitialize() after PetscInitialize() or PetNetInitialize()
  only sets SLEPc's state; SlepcFinalize() is then called by PetscFinalize()).

  Give it a Net (SpectrumSetNet()) and, for the curvature, a Loss and a batch (SpectrumSetLoss(), SpectrumSetBatch()
  or SpectrumSetDataset()), or any symmetric operator (SpectrumSetOperator()); read the options with
  SpectrumSetFromOptions(); then call the SpectrumCompute...() functions and SpectrumView().

  Level: beginner

.seealso: `SpectrumSetNet()`, `SpectrumSetLoss()`, `SpectrumSetBatch()`, `SpectrumSetOperator()`, `SpectrumSetFromOptions()`,
          `SpectrumComputeEigenvalues()`, `SpectrumView()`, `SpectrumDestroy()`
@*/
PetscErrorCode SpectrumCreate(MPI_Comm comm, Spectrum *sp)
{
  Spectrum s;

  PetscFunctionBegin;
  PetscValidPointer(sp, 2);
  PetscCall(SpectrumInitializePackage());
  {
    PetscBool slepc;

    PetscCall(SlepcInitialized(&slepc));
    if (!slepc) {
      PetscCall(SlepcInitializeNoArguments());
      PetscCall(PetscRegisterFinalize(SlepcFinalize));
    }
  }
  PetscCall(PetscHeaderCreate(s, SPECTRUM_CLASSID, "Spectrum", "Spectra of a network", "Spectrum", comm, SpectrumDestroy, SpectrumView));
  s->htype        = LOSS_HESSIAN_EXACT;
  s->k            = 5;
  s->nprobes      = 20;
  s->nslq         = 4;
  s->nsteps       = 30;
  s->njac         = 3;
  s->seed         = 1;
  s->stiffwarn    = 1e3;
  s->odemaxsize   = 2048;
  s->odemaxstates = 11;
  s->densitygrid  = 0;
  s->densitysigma = 0;
  PetscCall(EPSCreate(comm, &s->eps));
  PetscCall(EPSSetOptionsPrefix(s->eps, "spectrum_"));
  PetscCall(EPSSetProblemType(s->eps, EPS_HEP));
  PetscCall(EPSSetType(s->eps, EPSKRYLOVSCHUR));
  PetscCall(EPSSetWhichEigenpairs(s->eps, EPS_LARGEST_REAL));
  PetscCall(PetscObjectChangeTypeName((PetscObject)s, "default"));
  *sp = s;
  PetscFunctionReturn(0);
}

/* Forget the operator and everything computed with it (the settings stay) */
static PetscErrorCode SpectrumResetOperator_Private(Spectrum sp)
{
  PetscFunctionBegin;
  if (!sp->user) PetscCall(MatDestroy(&sp->H));
  PetscCall(MatDestroy(&sp->Hc));
  sp->setupcalled = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetNet - sets the Net to analyse

  Logically collective

  Input Parameters:
+ sp  - the Spectrum
- net - the Net, at the parameters to analyse; the Spectrum takes a reference to it

  Notes:
  The curvature is that of the Net's parameters when it is computed: an operator made at set-up follows later changes
  of the parameters as LossCreateNetHessian() does. Replacing the Net forgets the operator made for the previous one.

  Level: beginner

.seealso: `SpectrumSetLoss()`, `SpectrumSetBatch()`, `SpectrumCreate()`
@*/
PetscErrorCode SpectrumSetNet(Spectrum sp, Net net)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidHeaderSpecific(net, NET_CLASSID, 2);
  PetscCheckSameComm(sp, 1, net, 2);
  PetscCall(PetscObjectReference((PetscObject)net));
  PetscCall(NetDestroy(&sp->net));
  sp->net = net;
  PetscCall(SpectrumResetOperator_Private(sp));
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetLoss - sets the Loss whose curvature (Hessian or Gauss-Newton matrix) is analysed

  Logically collective

  Input Parameters:
+ sp   - the Spectrum
- loss - the Loss; the Spectrum takes a reference to it

  Level: beginner

.seealso: `SpectrumSetNet()`, `SpectrumSetBatch()`, `SpectrumSetHessianType()`, `LossCreateNetHessian()`
@*/
PetscErrorCode SpectrumSetLoss(Spectrum sp, Loss loss)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 2);
  PetscCall(PetscObjectReference((PetscObject)loss));
  PetscCall(LossDestroy(&sp->loss));
  sp->loss = loss;
  PetscCall(SpectrumResetOperator_Private(sp));
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetBatch - sets the samples of the analysis: the loss whose curvature is computed is the mean over them, the
  input Jacobian is taken at the first ones and the ode layers' trajectories start from the first one

  Collective

  Input Parameters:
+ sp - the Spectrum
. X  - the inputs, a batch Vec (whole samples on every rank, NetCreateVecs()); referenced
- T  - the targets, laid out as LossEvaluate() takes them, or NULL when no curvature is computed; referenced

  Level: beginner

.seealso: `SpectrumSetDataset()`, `SpectrumGetBatch()`, `LossNetHessianSetBatch()`
@*/
PetscErrorCode SpectrumSetBatch(Spectrum sp, Vec X, Vec T)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidHeaderSpecific(X, VEC_CLASSID, 2);
  if (T) PetscValidHeaderSpecific(T, VEC_CLASSID, 3);
  PetscCall(PetscObjectReference((PetscObject)X));
  if (T) PetscCall(PetscObjectReference((PetscObject)T));
  PetscCall(VecDestroy(&sp->X));
  PetscCall(VecDestroy(&sp->T));
  sp->X = X;
  sp->T = T;
  PetscCall(SpectrumResetOperator_Private(sp));
  PetscFunctionReturn(0);
}

/* The first N samples of a batch Vec of bs entries per sample, as a new Vec split over the ranks as PETSC_DECIDE
   splits N samples (the same samples, in the same order, on any number of ranks) */
static PetscErrorCode SpectrumFirstSamples_Private(Vec all, PetscInt bs, PetscInt N, Vec *first)
{
  PetscInt   n = PETSC_DECIDE, rstart;
  IS         is;
  VecScatter sc;

  PetscFunctionBegin;
  PetscCall(PetscSplitOwnership(PetscObjectComm((PetscObject)all), &n, &N));
  PetscCall(VecCreateMPI(PetscObjectComm((PetscObject)all), n * bs, N * bs, first));
  PetscCall(VecGetOwnershipRange(*first, &rstart, NULL));
  PetscCall(ISCreateStride(PetscObjectComm((PetscObject)all), n * bs, rstart, 1, &is));
  PetscCall(VecScatterCreate(all, is, *first, is, &sc));
  PetscCall(VecScatterBegin(sc, all, *first, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, all, *first, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(ISDestroy(&is));
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetDataset - takes the first N samples of a Dataset, in its source order, as the batch of the analysis

  Collective

  Input Parameters:
+ sp - the Spectrum
. ds - the Dataset (set up if needed)
- N  - the number of samples, or PETSC_DETERMINE for all; more than the Dataset holds means all

  Notes:
  The samples are copied (DatasetGetAll()) and split over the ranks as PETSC_DECIDE splits N samples, so that the
  analysis sees the same samples on any number of ranks. To keep the copy small, give the Dataset a limit
  (DatasetSetLimit(), -dataset_limit) of N.

  Level: beginner

.seealso: `SpectrumSetBatch()`, `DatasetGetAll()`, `DatasetSetLimit()`
@*/
PetscErrorCode SpectrumSetDataset(Spectrum sp, Dataset ds, PetscInt N)
{
  Vec         Xall, Tall, X, T;
  PetscInt    size, tsize;
  PetNetShape shape;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 2);
  PetscValidLogicalCollectiveInt(sp, N, 3);
  PetscCall(DatasetSetUp(ds));
  PetscCall(DatasetGetSize(ds, &size));
  PetscCheck(size > 0, PetscObjectComm((PetscObject)sp), PETSC_ERR_ARG_WRONG, "The Dataset has no samples to analyse");
  if (N == PETSC_DETERMINE || N == PETSC_DEFAULT || N > size) N = size;
  PetscCheck(N > 0, PetscObjectComm((PetscObject)sp), PETSC_ERR_ARG_OUTOFRANGE, "Number of samples %" PetscInt_FMT ": give at least 1", N);
  PetscCall(DatasetGetAll(ds, &Xall, &Tall));
  PetscCall(DatasetGetSampleShape(ds, &shape));
  PetscCall(PetNetShapeSize(&shape, &size));
  PetscCall(DatasetGetTargetSize(ds, &tsize));
  PetscCall(SpectrumFirstSamples_Private(Xall, size, N, &X));
  PetscCall(SpectrumFirstSamples_Private(Tall, tsize, N, &T));
  PetscCall(SpectrumSetBatch(sp, X, T));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&T));
  PetscFunctionReturn(0);
}

/*@
  SpectrumGetBatch - the batch of the analysis (borrowed)

  Not collective

  Input Parameter:
. sp - the Spectrum

  Output Parameters:
+ X - the inputs, or NULL (do not destroy it)
- T - the targets, or NULL (do not destroy it)

  Level: intermediate

.seealso: `SpectrumSetBatch()`, `SpectrumSetDataset()`
@*/
PetscErrorCode SpectrumGetBatch(Spectrum sp, Vec *X, Vec *T)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  if (X) *X = sp->X;
  if (T) *T = sp->T;
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetHessianType - which curvature of the loss is analysed

  Logically collective

  Input Parameters:
+ sp   - the Spectrum
- type - `LOSS_HESSIAN_EXACT` (the Hessian, the default; every layer kind of the Net needs a second-order kernel) or
         `LOSS_HESSIAN_GN` (the generalised Gauss-Newton matrix, symmetric positive semi-definite; any Net, ode layers
         included)

  Options Database Key:
. -spectrum_hessian <exact,gn> - the same from the options

  Level: beginner

.seealso: `SpectrumGetHessianType()`, `LossCreateNetHessian()`, `NetHasSecondOrder()`
@*/
PetscErrorCode SpectrumSetHessianType(Spectrum sp, LossHessianType type)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidLogicalCollectiveEnum(sp, type, 2);
  if (type != sp->htype) PetscCall(SpectrumResetOperator_Private(sp));
  sp->htype = type;
  PetscFunctionReturn(0);
}

/*@
  SpectrumGetHessianType - which curvature of the loss is analysed

  Not collective

  Input Parameter:
. sp - the Spectrum

  Output Parameter:
. type - `LOSS_HESSIAN_EXACT` or `LOSS_HESSIAN_GN`

  Level: beginner

.seealso: `SpectrumSetHessianType()`
@*/
PetscErrorCode SpectrumGetHessianType(Spectrum sp, LossHessianType *type)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidPointer(type, 2);
  *type = sp->htype;
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetOperator - analyses a given symmetric operator instead of the Net's Hessian

  Collective

  Input Parameters:
+ sp - the Spectrum
- H  - a square Mat, symmetric (only MatMult is used); referenced. NULL goes back to the Net's Hessian

  Notes:
  SpectrumComputeEigenvalues(), SpectrumComputeTrace() and SpectrumComputeDensity() then work on H: a dense matrix to
  test them, a Hessian built elsewhere, a Gauss-Newton matrix with damping (a MATSHELL or MatCreateConstantDiagonal()
  added with MatCreateComposite()), ...

  Level: intermediate

.seealso: `SpectrumGetOperator()`, `SpectrumComputeEigenvalues()`, `LossCreateNetHessian()`
@*/
PetscErrorCode SpectrumSetOperator(Spectrum sp, Mat H)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  if (H) PetscValidHeaderSpecific(H, MAT_CLASSID, 2);
  if (H) PetscCall(PetscObjectReference((PetscObject)H));
  PetscCall(MatDestroy(&sp->Hc));
  PetscCall(MatDestroy(&sp->H));
  sp->H           = H;
  sp->user        = H ? PETSC_TRUE : PETSC_FALSE;
  sp->setupcalled = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* The counting shell: y = H x, one more application */
static PetscErrorCode MatMult_SpectrumCount(Mat Hc, Vec x, Vec y)
{
  Spectrum sp;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(Hc, &sp));
  PetscCall(MatMult(sp->H, x, y));
  sp->napply++;
  PetscFunctionReturn(0);
}

/*
  The operator: the user's, or the Net's Hessian over the batch. An exact Hessian needs a second-order kernel in
  every node: refused here, naming the first node without one, rather than at the first product deep inside EPS.
*/
static PetscErrorCode SpectrumSetUpOperator_Private(Spectrum sp)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)sp);
  PetscInt m, n, M, N;

  PetscFunctionBegin;
  if (sp->Hc) PetscFunctionReturn(0);
  if (!sp->H) {
    PetscCheck(sp->net && sp->loss, comm, PETSC_ERR_ARG_WRONGSTATE, "The curvature needs a Net and a Loss (SpectrumSetNet(), SpectrumSetLoss()), or an operator (SpectrumSetOperator())");
    PetscCheck(sp->X && sp->T, comm, PETSC_ERR_ARG_WRONGSTATE, "The curvature needs a batch with targets: SpectrumSetBatch() or SpectrumSetDataset()");
    PetscCall(SpectrumSetUp(sp));
    PetscCall(LossCreateNetHessian(sp->loss, sp->net, sp->htype, &sp->H));
    PetscCall(LossNetHessianSetBatch(sp->H, sp->X, sp->T));
    if (sp->chunk > 0) PetscCall(LossNetHessianSetChunkSize(sp->H, sp->chunk));
  }
  PetscCall(MatGetLocalSize(sp->H, &m, &n));
  PetscCall(MatGetSize(sp->H, &M, &N));
  PetscCheck(M == N && m == n, comm, PETSC_ERR_ARG_SIZ, "The operator must be square with the same row and column layout; it is %" PetscInt_FMT " x %" PetscInt_FMT " (local %" PetscInt_FMT " x %" PetscInt_FMT ")", M, N, m, n);
  PetscCall(MatCreateShell(comm, m, n, M, N, sp, &sp->Hc));
  PetscCall(MatShellSetOperation(sp->Hc, MATOP_MULT, (void (*)(void))MatMult_SpectrumCount));
  PetscCall(MatShellSetOperation(sp->Hc, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMult_SpectrumCount));
  PetscCall(MatSetOption(sp->Hc, MAT_SYMMETRIC, PETSC_TRUE));
  PetscFunctionReturn(0);
}

/*@
  SpectrumGetOperator - the symmetric operator whose spectrum is analysed: the user's, or the Net's Hessian (made if
  needed)

  Collective

  Input Parameter:
. sp - the Spectrum

  Output Parameter:
. H - the operator (borrowed: do not destroy it)

  Notes:
  The Net's Hessian is LossCreateNetHessian() of the Spectrum's Loss and Net on its batch; an exact Hessian on a Net
  with a layer kind that has no second-order kernel is an error that names the layer.

  Level: intermediate

.seealso: `SpectrumSetOperator()`, `LossCreateNetHessian()`, `SpectrumGetNumOperatorApplications()`
@*/
PetscErrorCode SpectrumGetOperator(Spectrum sp, Mat *H)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidPointer(H, 2);
  PetscCall(SpectrumSetUpOperator_Private(sp));
  *H = sp->H;
  PetscFunctionReturn(0);
}

/*@
  SpectrumGetNumOperatorApplications - how many products with the operator (Hessian-vector products) the Spectrum
  has computed

  Not collective

  Input Parameter:
. sp - the Spectrum

  Output Parameter:
. n - the products since the operator was made (EPS, Hutchinson probes and Lanczos steps together)

  Level: intermediate

.seealso: `SpectrumGetOperator()`, `SpectrumComputeEigenvalues()`
@*/
PetscErrorCode SpectrumGetNumOperatorApplications(Spectrum sp, PetscInt *n)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidIntPointer(n, 2);
  *n = sp->napply;
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetSeed - the seed of the random probes (Rademacher vectors) and of EPS's initial vector

  Logically collective

  Input Parameters:
+ sp   - the Spectrum
- seed - the seed (default 1)

  Options Database Key:
. -spectrum_seed <s> - the same from the options

  Notes:
  Entry i of probe j is a function of (seed, j, i) alone, the global index i, so the probes, and the results, do not
  depend on the number of ranks.

  Level: intermediate

.seealso: `SpectrumComputeTrace()`, `SpectrumComputeDensity()`
@*/
PetscErrorCode SpectrumSetSeed(Spectrum sp, unsigned long seed)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  sp->seed = seed;
  PetscFunctionReturn(0);
}

/*@C
  SpectrumSetOptionsPrefix - sets the prefix of the Spectrum's options, e.g. "trainer_" for -trainer_spectrum_k; its
  EPS reads -<prefix>spectrum_eps_*, the input-Jacobian SVD -<prefix>spectrum_jacobian_svd_*

  Logically collective

  Input Parameters:
+ sp     - the Spectrum
- prefix - the prefix (NULL or "" for none); it must not begin with a hyphen

  Level: intermediate

.seealso: `SpectrumAppendOptionsPrefix()`, `SpectrumGetOptionsPrefix()`, `SpectrumSetFromOptions()`
@*/
PetscErrorCode SpectrumSetOptionsPrefix(Spectrum sp, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)sp, prefix));
  PetscCall(EPSSetOptionsPrefix(sp->eps, prefix));
  PetscCall(EPSAppendOptionsPrefix(sp->eps, "spectrum_"));
  PetscFunctionReturn(0);
}

/*@C
  SpectrumAppendOptionsPrefix - appends to the prefix of the Spectrum's options

  Logically collective

  Input Parameters:
+ sp     - the Spectrum
- prefix - the text to append

  Level: intermediate

.seealso: `SpectrumSetOptionsPrefix()`, `SpectrumGetOptionsPrefix()`
@*/
PetscErrorCode SpectrumAppendOptionsPrefix(Spectrum sp, const char prefix[])
{
  const char *full;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCall(PetscObjectAppendOptionsPrefix((PetscObject)sp, prefix));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)sp, &full));
  PetscCall(EPSSetOptionsPrefix(sp->eps, full));
  PetscCall(EPSAppendOptionsPrefix(sp->eps, "spectrum_"));
  PetscFunctionReturn(0);
}

/*@C
  SpectrumGetOptionsPrefix - the prefix of the Spectrum's options

  Not collective

  Input Parameter:
. sp - the Spectrum

  Output Parameter:
. prefix - the prefix (NULL when none was set); owned by the Spectrum

  Level: intermediate

.seealso: `SpectrumSetOptionsPrefix()`, `SpectrumAppendOptionsPrefix()`
@*/
PetscErrorCode SpectrumGetOptionsPrefix(Spectrum sp, const char *prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)sp, prefix));
  PetscFunctionReturn(0);
}

static PetscErrorCode SpectrumOptionsCount_Private(PetscOptionItems *PetscOptionsObject, Spectrum sp, const char opt[], const char text[], PetscInt min, PetscInt *value)
{
  PetscFunctionBegin;
  PetscCall(PetNetOptionsInt(opt, text, "SpectrumSetFromOptions", *value, value, NULL));
  PetscCheck(*value >= min, PetscObjectComm((PetscObject)sp), PETSC_ERR_ARG_OUTOFRANGE, "%s %" PetscInt_FMT ": give a number >= %" PetscInt_FMT, opt, *value, min);
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetFromOptions - reads the Spectrum's options, and those of its EPS

  Collective

  Input Parameter:
. sp - the Spectrum

  Options Database Keys:
+ -spectrum_hessian <exact,gn>           - the curvature: exact Hessian or generalised Gauss-Newton matrix
. -spectrum_k <k>                        - eigenvalues computed by SpectrumComputeEigenvalues() (default 5)
. -spectrum_probes <m>                   - Hutchinson probes (default 20)
. -spectrum_slq_probes <m>               - stochastic Lanczos quadrature probes (default 4)
. -spectrum_lanczos_steps <k>            - Lanczos steps per probe (default 30)
. -spectrum_density_grid <n>             - SpectrumView() prints the density on n points (default 0: only a summary)
. -spectrum_density_sigma <s>            - width of the Gaussian that smooths the density (default: 1/100 of its support)
. -spectrum_jacobian_samples <n>         - samples whose input Jacobian SpectrumComputeJacobianSingularValues() takes (3)
. -spectrum_chunk_size <n>               - local samples per pass of the Hessian-vector product (0: all at once)
. -spectrum_seed <s>                     - seed of the probes
. -spectrum_stiffness_warn <r>           - stiffness ratio above which an explicit ode integrator is warned about (1e3)
. -spectrum_ode_max_size <n>             - largest ode state (entries per sample) whose Jacobian is analysed (2048)
. -spectrum_ode_max_states <n>           - states of the trajectory analysed, evenly spread over the steps (11)
- -spectrum_eps_*                        - the EPS (e.g. -spectrum_eps_type power -spectrum_eps_tol 1e-6)

  Level: beginner

.seealso: `SpectrumSetOptionsPrefix()`, `SpectrumCreate()`, `EPSSetFromOptions()`
@*/
PetscErrorCode SpectrumSetFromOptions(Spectrum sp)
{
  LossHessianType htype = sp->htype;
  PetscInt        seed  = (PetscInt)sp->seed;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscObjectOptionsBegin((PetscObject)sp);
  PetscCall(PetscOptionsEnum("-spectrum_hessian", "Curvature analysed: exact Hessian or generalised Gauss-Newton", "SpectrumSetHessianType", LossHessianTypes, (PetscEnum)htype, (PetscEnum *)&htype, NULL));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_k", "Eigenvalues to compute", 1, &sp->k));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_probes", "Hutchinson probes", 1, &sp->nprobes));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_slq_probes", "Stochastic Lanczos quadrature probes", 1, &sp->nslq));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_lanczos_steps", "Lanczos steps per probe", 1, &sp->nsteps));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_density_grid", "Points on which SpectrumView() prints the density (0: a summary)", 0, &sp->densitygrid));
  PetscCall(PetscOptionsReal("-spectrum_density_sigma", "Width of the Gaussian smoothing the density (0: 1/100 of its support)", "SpectrumDensityEvaluate", sp->densitysigma, &sp->densitysigma, NULL));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_jacobian_samples", "Samples whose input Jacobian is analysed", 1, &sp->njac));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_chunk_size", "Local samples per pass of a Hessian-vector product (0: all)", 0, &sp->chunk));
  PetscCall(PetNetOptionsBoundedInt("-spectrum_seed", "Seed of the random probes", "SpectrumSetSeed", seed, &seed, NULL, 0));
  PetscCall(PetscOptionsReal("-spectrum_stiffness_warn", "Stiffness ratio above which explicit ode integrators are warned about", "SpectrumComputeODEStiffness", sp->stiffwarn, &sp->stiffwarn, NULL));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_ode_max_size", "Largest ode state whose Jacobian is analysed (dense eigenvalues)", 1, &sp->odemaxsize));
  PetscCall(SpectrumOptionsCount_Private(PetscOptionsObject, sp, "-spectrum_ode_max_states", "States of a trajectory analysed", 2, &sp->odemaxstates));
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)sp, PetscOptionsObject));
  PetscOptionsEnd();
  PetscCall(SpectrumSetHessianType(sp, htype));
  sp->seed = (unsigned long)seed;
  PetscCall(EPSSetFromOptions(sp->eps));
  sp->fromoptions = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  SpectrumSetUp - checks what the Spectrum was given and sets its Net up. Idempotent; the computations call it.

  Collective

  Input Parameter:
. sp - the Spectrum

  Notes:
  An exact Hessian (the default) on a Net with a node whose layer kind has no second-order kernel (an ode layer, or a
  kind registered without one) is refused here, with an error naming that node and saying to use the Gauss-Newton
  matrix (-spectrum_hessian gn).

  Level: intermediate

.seealso: `SpectrumSetFromOptions()`, `SpectrumSetHessianType()`, `NetHasSecondOrder()`
@*/
PetscErrorCode SpectrumSetUp(Spectrum sp)
{
  MPI_Comm comm;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  if (sp->setupcalled) PetscFunctionReturn(0);
  comm = PetscObjectComm((PetscObject)sp);
  PetscCheck(sp->net || sp->H, comm, PETSC_ERR_ARG_WRONGSTATE, "Give the Spectrum a Net (SpectrumSetNet()) or an operator (SpectrumSetOperator())");
  if (sp->net) PetscCall(NetSetUp(sp->net));
  if (sp->net && sp->loss && !sp->user && sp->htype == LOSS_HESSIAN_EXACT) {
    PetscBool   has;
    PetscInt    l;
    Layer       layer;
    LayerType   type;
    const char *name, *prefix;

    PetscCall(NetHasSecondOrder(sp->net, &has, &l));
    if (!has) {
      PetscCall(NetGetLayer(sp->net, l, &layer));
      PetscCall(LayerGetType(layer, &type));
      PetscCall(NetGetLayerName(sp->net, l, &name));
      PetscCall(PetscObjectGetOptionsPrefix((PetscObject)sp, &prefix));
      SETERRQ(comm, PETSC_ERR_SUP,
              "The exact Hessian spectrum needs a second-order kernel in every layer, and layer %" PetscInt_FMT
              " (\"%s\", kind %s) has none: use the Gauss-Newton matrix instead, -%sspectrum_hessian gn (SpectrumSetHessianType(sp, LOSS_HESSIAN_GN)), which "
              "needs only first derivatives and covers every layer kind",
              l, name, type, prefix ? prefix : "");
    }
  }
  sp->setupcalled = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  SpectrumGetEPS - the SLEPc eigensolver of SpectrumComputeEigenvalues() (borrowed), to set its type, tolerances, ...

  Not collective

  Input Parameter:
. sp - the Spectrum

  Output Parameter:
. eps - the EPS (do not destroy it): Krylov-Schur, Hermitian problem, largest algebraic eigenvalues, options prefix
        <prefix>spectrum_ (-spectrum_eps_type, -spectrum_eps_tol, -spectrum_eps_largest_magnitude, ...)

  Notes:
  SpectrumComputeEigenvalues() sets its operator, its number of eigenvalues (unless -spectrum_eps_nev is given) and its
  initial vector before each solve.

  Level: intermediate

.seealso: `SpectrumComputeEigenvalues()`, `EPSSetType()`, `EPSSetTolerances()`
@*/
PetscErrorCode SpectrumGetEPS(Spectrum sp, EPS *eps)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidPointer(eps, 2);
  *eps = sp->eps;
  PetscFunctionReturn(0);
}

/* Evaluation mode for the duration of a computation (see the top of this file) */
PetscErrorCode SpectrumBeginAnalysis_Private(Spectrum sp, PetscBool *training)
{
  PetscFunctionBegin;
  *training = PETSC_FALSE;
  if (!sp->net) PetscFunctionReturn(0);
  PetscCall(NetGetTraining(sp->net, training));
  if (*training) PetscCall(NetSetTraining(sp->net, PETSC_FALSE));
  PetscFunctionReturn(0);
}

PetscErrorCode SpectrumEndAnalysis_Private(Spectrum sp, PetscBool training)
{
  PetscFunctionBegin;
  if (sp->net && training) PetscCall(NetSetTraining(sp->net, PETSC_TRUE));
  PetscFunctionReturn(0);
}

/*
  Rademacher probe j: z_i = +-1 from a hash (splitmix64) of the seed, j and the global index i. PetscRandom is a stream:
  a rank would have to draw every entry before its own to agree with a run on fewer ranks; the hash needs none.
*/
static inline uint64_t SpectrumMix_Private(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

PetscErrorCode SpectrumRademacher_Private(Spectrum sp, PetscInt j, Vec z)
{
  PetscInt     rstart, rend;
  PetscScalar *a;
  uint64_t     stream = SpectrumMix_Private(SpectrumMix_Private((uint64_t)sp->seed) ^ (uint64_t)(j + 1));

  PetscFunctionBegin;
  PetscCall(VecGetOwnershipRange(z, &rstart, &rend));
  PetscCall(VecGetArrayWrite(z, &a));
  for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = (SpectrumMix_Private(stream + (uint64_t)i) >> 63) ? 1.0 : -1.0;
  PetscCall(VecRestoreArrayWrite(z, &a));
  PetscFunctionReturn(0);
}

/* Sample s of the batch X into x1, a one-sample batch held by rank 0 (local size: the sample size there, 0 elsewhere) */
PetscErrorCode SpectrumGetSample_Private(Spectrum sp, PetscInt s, Vec x1)
{
  PetscInt    n, size;
  PetscMPIInt rank;
  IS          from, to;
  VecScatter  sc;

  PetscFunctionBegin;
  PetscCall(VecGetSize(x1, &size));
  PetscCall(VecGetLocalSize(x1, &n));
  PetscCallMPI(MPI_Comm_rank(PetscObjectComm((PetscObject)x1), &rank));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, n, s * size, 1, &from));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, n, 0, 1, &to));
  PetscCall(VecScatterCreate(sp->X, from, x1, to, &sc));
  PetscCall(VecScatterBegin(sc, sp->X, x1, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, sp->X, x1, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(ISDestroy(&from));
  PetscCall(ISDestroy(&to));
  PetscFunctionReturn(0);
}

static PetscErrorCode SpectrumViewDensity_Private(Spectrum sp, PetscViewer viewer)
{
  PetscReal lo = PETSC_MAX_REAL, hi = PETSC_MIN_REAL, neg = 0, pos = 0, sigma, scale = 0;

  PetscFunctionBegin;
  for (PetscInt i = 0; i < sp->ndensity; i++) {
    lo    = PetscMin(lo, sp->nodes[i]);
    hi    = PetscMax(hi, sp->nodes[i]);
    scale = PetscMax(scale, PetscAbsReal(sp->nodes[i]));
  }
  /* the bulk of a network's Hessian sits near zero, where a few quadrature nodes of either sign stand for it: split the
     weight into near zero (|node| <= 1e-3 max|node|), clearly negative and clearly positive */
  for (PetscInt i = 0; i < sp->ndensity; i++) {
    if (sp->nodes[i] < -1e-3 * scale)
      neg += sp->weights[i];
    else if (sp->nodes[i] > 1e-3 * scale)
      pos += sp->weights[i];
  }
  PetscCall(PetscViewerASCIIPrintf(viewer, "density (stochastic Lanczos quadrature, %" PetscInt_FMT " probes x %" PetscInt_FMT " steps, %" PetscInt_FMT " products, %.2f s): support [%.6e, %.6e], trace %.6e\n", sp->densityprobes, sp->densitysteps,
                                   sp->densityapply, (double)sp->densitytime, (double)lo, (double)hi, (double)sp->densitytrace));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  PetscCall(PetscViewerASCIIPrintf(viewer, "weight near zero (|lambda| <= 1e-3 max|lambda|) %.4f, below %.4f, above %.4f\n", (double)PetscMax(1 - neg - pos, 0), (double)neg, (double)pos));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  if (sp->densitygrid > 0) {
    PetscReal *grid, *dens;
    PetscInt   n = sp->densitygrid;

    sigma = sp->densitysigma > 0 ? sp->densitysigma : PetscMax(hi - lo, PETSC_SMALL) / 100;
    PetscCall(PetscMalloc2(n, &grid, n, &dens));
    for (PetscInt i = 0; i < n; i++) grid[i] = n > 1 ? lo + (hi - lo) * i / (n - 1) : lo;
    PetscCall(SpectrumDensityEvaluate(sp->ndensity, sp->nodes, sp->weights, sigma, n, grid, dens));
    PetscCall(PetscViewerASCIIPushTab(viewer));
    PetscCall(PetscViewerASCIIPrintf(viewer, "density on %" PetscInt_FMT " points (Gaussian width %.3e): lambda  density\n", n, (double)sigma));
    for (PetscInt i = 0; i < n; i++) PetscCall(PetscViewerASCIIPrintf(viewer, "%13.6e  %.6e\n", (double)grid[i], (double)dens[i]));
    PetscCall(PetscViewerASCIIPopTab(viewer));
    PetscCall(PetscFree2(grid, dens));
  }
  PetscFunctionReturn(0);
}

/*@
  SpectrumView - prints what the Spectrum analyses and every result computed so far, with timings

  Collective

  Input Parameters:
+ sp     - the Spectrum
- viewer - an ASCII viewer, or NULL for PETSC_VIEWER_STDOUT_(comm)

  Options Database Key:
. -spectrum_view - SpectrumViewFromOptions() prints it

  Notes:
  One line per result: the eigenvalues with their relative residuals, the trace, the density's summary (its support,
  its trace, the weight of its nodes near zero, below and above; on a grid with -spectrum_density_grid), the input Jacobian's singular values per sample, each weight's singular values, each ode
  layer's stiffness along its trajectory.

  Level: beginner

.seealso: `SpectrumViewFromOptions()`, `SpectrumComputeEigenvalues()`, `SpectrumComputeTrace()`, `SpectrumComputeDensity()`
@*/
PetscErrorCode SpectrumView(Spectrum sp, PetscViewer viewer)
{
  PetscBool iascii;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)sp), &viewer));
  PetscValidHeaderSpecific(viewer, PETSC_VIEWER_CLASSID, 2);
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &iascii));
  if (!iascii) PetscFunctionReturn(0);
  PetscCall(PetscObjectPrintClassNamePrefixType((PetscObject)sp, viewer));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  if (sp->user)
    PetscCall(PetscViewerASCIIPrintf(viewer, "operator: given by SpectrumSetOperator()\n"));
  else if (sp->net && sp->loss && sp->X) {
    PetscInt    N = 0, n = 0, size;
    PetNetShape shape;

    PetscCall(NetGetInputShape(sp->net, &shape));
    PetscCall(PetNetShapeSize(&shape, &size));
    PetscCall(VecGetSize(sp->X, &N));
    PetscCall(NetGetNumParameters(sp->net, &n));
    PetscCall(PetscViewerASCIIPrintf(viewer, "operator: %s of the mean loss over %" PetscInt_FMT " samples, %" PetscInt_FMT " parameters\n", sp->htype == LOSS_HESSIAN_EXACT ? "Hessian" : "Gauss-Newton matrix", size ? N / size : 0, n));
  }
  if (sp->neig) {
    EPSType type;

    PetscCall(EPSGetType(sp->eps, &type));
    PetscCall(PetscViewerASCIIPrintf(viewer, "eigenvalues (EPS %s, %" PetscInt_FMT " of %" PetscInt_FMT " converged, %" PetscInt_FMT " iterations, %" PetscInt_FMT " products, %.2f s):\n", type, sp->nconv, sp->neig, sp->eigits, sp->eigapply,
                                     (double)sp->eigtime));
    PetscCall(PetscViewerASCIIPushTab(viewer));
    for (PetscInt i = 0; i < PetscMin(sp->nconv, sp->neig); i++) PetscCall(PetscViewerASCIIPrintf(viewer, "lambda_%" PetscInt_FMT " = %.10e  (relative residual %.1e)\n", i + 1, (double)sp->eig[i], (double)sp->eigerr[i]));
    PetscCall(PetscViewerASCIIPopTab(viewer));
  }
  if (sp->hastrace) PetscCall(PetscViewerASCIIPrintf(viewer, "trace (Hutchinson, %" PetscInt_FMT " probes, %.2f s): %.6e +- %.1e\n", sp->traceprobes, (double)sp->tracetime, (double)sp->trace, (double)sp->tracese));
  if (sp->ndensity) PetscCall(SpectrumViewDensity_Private(sp, viewer));
  if (sp->njacres) {
    PetscReal lip = 0;

    PetscCall(PetscViewerASCIIPrintf(viewer, "input Jacobian singular values (SLEPc SVD, %" PetscInt_FMT " samples, %.2f s):\n", sp->njacres, (double)sp->jactime));
    PetscCall(PetscViewerASCIIPushTab(viewer));
    for (PetscInt s = 0; s < sp->njacres; s++) {
      PetscCall(PetscViewerASCIIPrintf(viewer, "sample %" PetscInt_FMT ": sigma_max %.6e  sigma_min %.6e\n", s, (double)sp->jmax[s], (double)sp->jmin[s]));
      lip = PetscMax(lip, sp->jmax[s]);
    }
    PetscCall(PetscViewerASCIIPrintf(viewer, "local Lipschitz estimate (max sigma_max): %.6e\n", (double)lip));
    PetscCall(PetscViewerASCIIPopTab(viewer));
  }
  if (sp->weight) PetscCall(SpectrumViewWeights_Private(sp, viewer));
  if (sp->ode) PetscCall(SpectrumViewODE_Private(sp, viewer));
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}

/*@C
  SpectrumViewFromOptions - prints the Spectrum if an option asks for it

  Collective

  Input Parameters:
+ sp   - the Spectrum
. obj  - an object whose options prefix is used instead of the Spectrum's, or NULL
- name - the option, e.g. "-spectrum_view"

  Level: intermediate

.seealso: `SpectrumView()`, `PetscObjectViewFromOptions()`
@*/
PetscErrorCode SpectrumViewFromOptions(Spectrum sp, PetscObject obj, const char name[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCall(PetscObjectViewFromOptions((PetscObject)sp, obj, name));
  PetscFunctionReturn(0);
}

/*@
  SpectrumReset - forgets the operator made at set-up and every result; the Net, Loss, batch and settings stay

  Collective

  Input Parameter:
. sp - the Spectrum

  Notes:
  The next computation makes the operator anew, e.g. after the Net's parameters or batch layout changed in a way the
  operator does not follow.

  Level: intermediate

.seealso: `SpectrumDestroy()`, `SpectrumSetUp()`
@*/
PetscErrorCode SpectrumReset(Spectrum sp)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCall(SpectrumResetOperator_Private(sp));
  PetscCall(PetscFree2(sp->eig, sp->eigerr));
  PetscCall(PetscFree2(sp->nodes, sp->weights));
  PetscCall(PetscFree2(sp->jmax, sp->jmin));
  PetscCall(SpectrumResetWeights_Private(sp));
  PetscCall(SpectrumResetODE_Private(sp));
  sp->neig = sp->nconv = sp->ndensity = sp->njacres = 0;
  sp->hastrace                                      = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@
  SpectrumDestroy - destroys a Spectrum

  Collective

  Input Parameter:
. sp - the Spectrum (set to NULL)

  Level: beginner

.seealso: `SpectrumCreate()`, `SpectrumReset()`
@*/
PetscErrorCode SpectrumDestroy(Spectrum *sp)
{
  PetscFunctionBegin;
  if (!*sp) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*sp, SPECTRUM_CLASSID, 1);
  if (--((PetscObject)(*sp))->refct > 0) {
    *sp = NULL;
    PetscFunctionReturn(0);
  }
  PetscCall(SpectrumReset(*sp));
  PetscCall(MatDestroy(&(*sp)->H));
  PetscCall(EPSDestroy(&(*sp)->eps));
  PetscCall(VecDestroy(&(*sp)->X));
  PetscCall(VecDestroy(&(*sp)->T));
  PetscCall(LossDestroy(&(*sp)->loss));
  PetscCall(NetDestroy(&(*sp)->net));
  PetscCall(PetscHeaderDestroy(sp));
  PetscFunctionReturn(0);
}
