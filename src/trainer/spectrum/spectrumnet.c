/*
  The network's own spectra: the singular values of its input Jacobian at a few samples (SLEPc SVD on the Net's
  Jacobian shell) and those of its weights (LAPACK dgesvd on each weight, gathered).

  Input Jacobian. The Jacobian of a batch is block diagonal, one block per sample (in evaluation mode no layer mixes
  samples), so each sample is analysed alone: the sample is copied into a one-sample batch held by rank 0 and the Net
  run forward on it; NetGetJacobian()'s shell J (out x in, MatMult = JVP, MatMultTranspose = VJP) goes to SLEPc's SVD
  with an implicit transpose. sigma_max(J) = max |J v| / |v| is the local Lipschitz constant of the network at that
  sample (in the 2-norm); sigma_min is the smallest of the min(out, in) singular values.

  Weights. A dense weight is W [out][in] (row-major, PyTorch's Linear.weight), a conv2d weight is [Cout][KH][KW][Cg]
  with Cg = Cin/groups, i.e. the matrix Cout x (KH KW Cg) row-major; a permutation of the columns (PyTorch's
  [Cout][Cg][KH][KW]) does not change the singular values. Either is read as the column-major cols x rows matrix W^T,
  which has the same singular values, and handed to dgesvd. The weights of the inner Nets of ode layers are included,
  named as in the state_dict ("3.net.0.weight").
*/
#include <petnet/private/spectrumimpl.h>
#include <petnet/private/layerimpl.h> /* LayerGetTensors(): where each weight sits in a layer's parameters */
#include <petnetts.h>
#include <slepcsvd.h>
#include <petscblaslapack.h>

/*@
  SpectrumComputeJacobianSingularValues - the largest and smallest singular values of the Net's input Jacobian at each
  of the first samples of the batch; the largest is the network's local Lipschitz constant there

  Collective

  Input Parameters:
+ sp       - the Spectrum, with a Net and a batch
- nsamples - how many samples, or PETSC_DEFAULT for -spectrum_jacobian_samples (default 3); at most the batch's

  Output Parameters:
+ smax - sigma_max of each sample's Jacobian (array of nsamples entries, may be NULL)
- smin - sigma_min of each (the smallest of the min(outputs, inputs) singular values; may be NULL)

  Notes:
  Each sample is run forward alone, in evaluation mode, and its Jacobian shell handed to SLEPc's SVD (default type
  cross, implicit transpose; options -spectrum_jacobian_svd_*). The Net is left at the last sample's forward pass.
  SpectrumView() prints the values and their maximum, the Lipschitz estimate.

  Level: intermediate

.seealso: `NetGetJacobian()`, `SpectrumComputeWeightSingularValues()`, `SpectrumView()`
@*/
PetscErrorCode SpectrumComputeJacobianSingularValues(Spectrum sp, PetscInt nsamples, PetscReal smax[], PetscReal smin[])
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)sp);
  PetNetShape    shape;
  PetscInt       size, N;
  PetscMPIInt    rank;
  Vec            x1;
  SVD            svd;
  const char    *prefix;
  PetscBool      training;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscValidLogicalCollectiveInt(sp, nsamples, 2);
  PetscCheck(sp->net && sp->X, comm, PETSC_ERR_ARG_WRONGSTATE, "The input Jacobian needs a Net and a batch: SpectrumSetNet(), SpectrumSetBatch()");
  PetscCall(SpectrumSetUp(sp));
  if (nsamples == PETSC_DEFAULT || nsamples == PETSC_DECIDE) nsamples = sp->njac;
  PetscCall(NetGetInputShape(sp->net, &shape));
  PetscCall(PetNetShapeSize(&shape, &size));
  PetscCall(VecGetSize(sp->X, &N));
  N        = N / size;
  nsamples = PetscMin(nsamples, N);
  PetscCheck(nsamples >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "Number of samples %" PetscInt_FMT ": give at least 1", nsamples);
  PetscCall(PetscLogEventBegin(SPECTRUM_Jacobian, sp, 0, 0, 0));
  PetscCall(PetscTime(&t0));
  PetscCall(SpectrumBeginAnalysis_Private(sp, &training));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(VecCreateMPI(comm, rank == 0 ? size : 0, size, &x1));
  PetscCall(SVDCreate(comm, &svd));
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)sp, &prefix));
  PetscCall(SVDSetOptionsPrefix(svd, prefix));
  PetscCall(SVDAppendOptionsPrefix(svd, "spectrum_jacobian_"));
  PetscCall(SVDSetImplicitTranspose(svd, PETSC_TRUE)); /* the shell has MatMultTranspose, not an explicit transpose */
  PetscCall(SVDSetDimensions(svd, 1, PETSC_DEFAULT, PETSC_DEFAULT));
  if (sp->fromoptions) PetscCall(SVDSetFromOptions(svd));
  PetscCall(PetscFree2(sp->jmax, sp->jmin));
  PetscCall(PetscMalloc2(nsamples, &sp->jmax, nsamples, &sp->jmin));
  for (PetscInt s = 0; s < nsamples; s++) {
    Mat J;

    PetscCall(SpectrumGetSample_Private(sp, s, x1));
    PetscCall(NetForward(sp->net, x1, NULL));
    PetscCall(NetGetJacobian(sp->net, &J));
    PetscCall(SVDSetOperators(svd, J, NULL));
    for (PetscInt end = 0; end < 2; end++) {
      PetscInt  nconv;
      PetscReal sigma;

      PetscCall(SVDSetWhichSingularTriplets(svd, end ? SVD_SMALLEST : SVD_LARGEST));
      PetscCall(SVDSolve(svd));
      PetscCall(SVDGetConverged(svd, &nconv));
      PetscCheck(nconv >= 1, comm, PETSC_ERR_NOT_CONVERGED, "The SVD of the input Jacobian at sample %" PetscInt_FMT " did not converge: raise -spectrum_jacobian_svd_max_it or loosen -spectrum_jacobian_svd_tol", s);
      PetscCall(SVDGetSingularTriplet(svd, 0, &sigma, NULL, NULL));
      if (end)
        sp->jmin[s] = sigma;
      else
        sp->jmax[s] = sigma;
    }
    if (smax) smax[s] = sp->jmax[s];
    if (smin) smin[s] = sp->jmin[s];
  }
  sp->njacres = nsamples;
  PetscCall(SVDDestroy(&svd));
  PetscCall(VecDestroy(&x1));
  PetscCall(SpectrumEndAnalysis_Private(sp, training));
  PetscCall(PetscTime(&t1));
  sp->jactime = t1 - t0;
  PetscCall(PetscLogEventEnd(SPECTRUM_Jacobian, sp, 0, 0, 0));
  PetscFunctionReturn(0);
}

PetscErrorCode SpectrumResetWeights_Private(Spectrum sp)
{
  PetscFunctionBegin;
  for (PetscInt i = 0; i < sp->nweights; i++) PetscCall(PetscFree(sp->weight[i].sv));
  PetscCall(PetscFree(sp->weight));
  sp->nweights = 0;
  PetscFunctionReturn(0);
}

/* The singular values of the rows x cols row-major matrix at theta[offset ..], gathered to every rank */
static PetscErrorCode SpectrumWeightSVD_Private(Vec theta, PetscInt offset, PetscInt rows, PetscInt cols, PetscReal sv[])
{
  Vec          w;
  IS           is;
  VecScatter   sc;
  PetscScalar *a, wq, *work;
  PetscBLASInt bm, bn, one = 1, lwork = -1, info;

  PetscFunctionBegin;
  PetscCall(ISCreateStride(PETSC_COMM_SELF, rows * cols, offset, 1, &is));
  PetscCall(VecCreateSeq(PETSC_COMM_SELF, rows * cols, &w));
  PetscCall(VecScatterCreate(theta, is, w, NULL, &sc));
  PetscCall(VecScatterBegin(sc, theta, w, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(sc, theta, w, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&sc));
  PetscCall(ISDestroy(&is));
  PetscCall(PetscBLASIntCast(cols, &bm)); /* W^T: cols x rows, column-major */
  PetscCall(PetscBLASIntCast(rows, &bn));
  PetscCall(VecGetArray(w, &a));
  PetscCall(PetscFPTrapPush(PETSC_FP_TRAP_OFF));
  PetscCallBLAS("LAPACKgesvd", LAPACKgesvd_("N", "N", &bm, &bn, a, &bm, sv, NULL, &one, NULL, &one, &wq, &lwork, &info));
  PetscCall(PetscBLASIntCast((PetscInt)PetscRealPart(wq), &lwork));
  PetscCall(PetscMalloc1(lwork, &work));
  PetscCallBLAS("LAPACKgesvd", LAPACKgesvd_("N", "N", &bm, &bn, a, &bm, sv, NULL, &one, NULL, &one, work, &lwork, &info));
  PetscCall(PetscFPTrapPop());
  PetscCall(PetscFree(work));
  PetscCall(VecRestoreArray(w, &a));
  PetscCall(VecDestroy(&w));
  PetscCheck(!info, PETSC_COMM_SELF, PETSC_ERR_LIB, "LAPACK dgesvd failed on a %" PetscInt_FMT " x %" PetscInt_FMT " weight: info %d", rows, cols, (int)info);
  PetscFunctionReturn(0);
}

/* The dense and conv2d weights of net, whose parameters start at entry offset of theta; names begin with prefix */
static PetscErrorCode SpectrumAddWeights_Private(Spectrum sp, Net net, Vec theta, PetscInt offset, const char prefix[], PetscBool inner)
{
  PetscInt nlayers;

  PetscFunctionBegin;
  PetscCall(NetGetNumLayers(net, &nlayers));
  for (PetscInt l = 0; l < nlayers; l++) {
    Layer           layer;
    LayerType       type;
    PetscInt        start, nt;
    LayerTensorInfo info[LAYER_MAX_TENSORS];
    PetscBool       isode, isweighted;
    char            name[256];

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(LayerGetType(layer, &type));
    PetscCall(NetGetLayerParameterRange(net, l, &start, NULL));
    if (inner)
      PetscCall(PetscSNPrintf(name, sizeof(name), "%s%" PetscInt_FMT ".", prefix, l)); /* as LayerTensors_ODE() names them */
    else {
      const char *node;

      PetscCall(NetGetLayerName(net, l, &node));
      PetscCall(PetscSNPrintf(name, sizeof(name), "%s%s.", prefix, node));
    }
    PetscCall(PetscStrcmp(type, LAYERODE, &isode));
    if (isode) {
      Net  f;
      char fprefix[256];

      PetscCall(LayerODEGetNet(layer, &f));
      PetscCall(PetscSNPrintf(fprefix, sizeof(fprefix), "%snet.", name));
      PetscCall(SpectrumAddWeights_Private(sp, f, theta, offset + start, fprefix, PETSC_TRUE));
      continue;
    }
    PetscCall(PetscStrInList(type, LAYERDENSE "," LAYERCONV2D, ',', &isweighted));
    if (!isweighted) continue;
    PetscCall(LayerGetTensors(layer, &nt, info));
    for (PetscInt t = 0; t < nt; t++) {
      SpectrumWeight *w;
      PetscBool       isweight;

      PetscCall(PetscStrcmp(info[t].name, "weight", &isweight));
      if (!isweight || info[t].buffer || info[t].ndim < 2 || !info[t].size) continue;
      PetscCall(PetscRealloc(sizeof(SpectrumWeight) * (sp->nweights + 1), &sp->weight));
      w = &sp->weight[sp->nweights];
      PetscCall(PetscMemzero(w, sizeof(*w)));
      PetscCall(PetscSNPrintf(w->name, sizeof(w->name), "%s%s", name, info[t].name));
      PetscCall(PetscStrncpy(w->kind, type, sizeof(w->kind)));
      w->rows = info[t].dims[0];
      w->cols = info[t].size / w->rows;
      PetscCall(PetscMalloc1(PetscMin(w->rows, w->cols), &w->sv));
      sp->nweights++;
      PetscCall(SpectrumWeightSVD_Private(theta, offset + start + info[t].offset, w->rows, w->cols, w->sv));
    }
  }
  PetscFunctionReturn(0);
}

/*@
  SpectrumComputeWeightSingularValues - the singular values of every dense and conv2d weight of the Net, those inside
  ode layers included

  Collective

  Input Parameter:
. sp - the Spectrum, with a Net

  Output Parameter:
. n - the number of weights analysed, or NULL

  Notes:
  A dense weight is the out x in matrix, a conv2d weight the Cout x (Cin/groups KH KW) matrix (one row per output
  channel); biases are left out. Every rank gathers each weight and computes all its singular values with LAPACK's
  dgesvd. SpectrumGetWeightSingularValues() returns them, SpectrumView() prints sigma_max, sigma_min, the condition
  number and the stable rank sum sigma_i^2 / sigma_max^2 of each.

  Level: intermediate

.seealso: `SpectrumGetWeightSingularValues()`, `SpectrumComputeJacobianSingularValues()`, `NetGetLayerParameterRange()`
@*/
PetscErrorCode SpectrumComputeWeightSingularValues(Spectrum sp, PetscInt *n)
{
  Vec            theta;
  PetscLogDouble t0, t1;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCheck(sp->net, PetscObjectComm((PetscObject)sp), PETSC_ERR_ARG_WRONGSTATE, "The weights' singular values need a Net: SpectrumSetNet()");
  PetscCall(SpectrumSetUp(sp));
  PetscCall(PetscLogEventBegin(SPECTRUM_Weights, sp, 0, 0, 0));
  PetscCall(PetscTime(&t0));
  PetscCall(SpectrumResetWeights_Private(sp));
  PetscCall(NetGetParameters(sp->net, &theta));
  PetscCall(SpectrumAddWeights_Private(sp, sp->net, theta, 0, "", PETSC_FALSE));
  if (!sp->weight) PetscCall(PetscMalloc1(1, &sp->weight)); /* computed, none found: SpectrumView() says so */
  if (n) *n = sp->nweights;
  PetscCall(PetscTime(&t1));
  sp->weighttime = t1 - t0;
  PetscCall(PetscLogEventEnd(SPECTRUM_Weights, sp, 0, 0, 0));
  PetscFunctionReturn(0);
}

/*@C
  SpectrumGetWeightSingularValues - the singular values of weight i from the last SpectrumComputeWeightSingularValues()

  Not collective

  Input Parameters:
+ sp - the Spectrum
- i  - the weight, 0 <= i < n of SpectrumComputeWeightSingularValues(), in the Net's order

  Output Parameters:
+ name - its state_dict key, e.g. "0.weight" (borrowed), or NULL
. rows - its rows (outputs, output channels), or NULL
. cols - its columns (inputs, Cin/groups KH KW), or NULL
- sv   - its min(rows, cols) singular values, descending (borrowed), or NULL

  Level: intermediate

.seealso: `SpectrumComputeWeightSingularValues()`
@*/
PetscErrorCode SpectrumGetWeightSingularValues(Spectrum sp, PetscInt i, const char *name[], PetscInt *rows, PetscInt *cols, const PetscReal *sv[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(sp, SPECTRUM_CLASSID, 1);
  PetscCheck(i >= 0 && i < sp->nweights, PETSC_COMM_SELF, PETSC_ERR_ARG_OUTOFRANGE, "Weight %" PetscInt_FMT " of %" PetscInt_FMT ": call SpectrumComputeWeightSingularValues() first, and give 0 <= i < its count", i, sp->nweights);
  if (name) *name = sp->weight[i].name;
  if (rows) *rows = sp->weight[i].rows;
  if (cols) *cols = sp->weight[i].cols;
  if (sv) *sv = sp->weight[i].sv;
  PetscFunctionReturn(0);
}

PetscErrorCode SpectrumViewWeights_Private(Spectrum sp, PetscViewer viewer)
{
  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "weight singular values (LAPACK, %" PetscInt_FMT " weights, %.2f s)%s\n", sp->nweights, (double)sp->weighttime, sp->nweights ? ":" : ": the Net has no dense or conv2d weight"));
  PetscCall(PetscViewerASCIIPushTab(viewer));
  for (PetscInt i = 0; i < sp->nweights; i++) {
    SpectrumWeight *w  = &sp->weight[i];
    PetscInt        n  = PetscMin(w->rows, w->cols);
    PetscReal       f2 = 0, smax = w->sv[0], smin = w->sv[n - 1];

    for (PetscInt j = 0; j < n; j++) f2 += w->sv[j] * w->sv[j];
    PetscCall(PetscViewerASCIIPrintf(viewer, "%s (%s, %" PetscInt_FMT " x %" PetscInt_FMT "): sigma_max %.6e  sigma_min %.6e  condition %.4e  stable rank %.4f\n", w->name, w->kind, w->rows, w->cols, (double)smax, (double)smin,
                                     smin > 0 ? (double)(smax / smin) : (double)PETSC_INFINITY, smax > 0 ? (double)(f2 / (smax * smax)) : 0.0));
  }
  PetscCall(PetscViewerASCIIPopTab(viewer));
  PetscFunctionReturn(0);
}
