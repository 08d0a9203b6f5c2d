/*
  Sharpness monitor (-trainer_monitor_sharpness N): every N epochs, the largest eigenvalue of the Hessian of the mean
  training loss over the first -trainer_sharpness_samples training samples (in the Dataset's source order, so the same
  samples every time and on any number of ranks), with a Spectrum whose options prefix is "trainer_"
  (-trainer_spectrum_hessian gn|exact, -trainer_spectrum_eps_tol, ...). The Hessian is the exact one when every layer
  kind of the Net has a second-order kernel, else the Gauss-Newton matrix; -trainer_spectrum_hessian chooses.
*/
#include <petnet/private/trainerimpl.h>

PetscErrorCode TrainerMonitorSharpness_Private(Trainer tr, PetscInt epoch)
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)tr);
  PetscInt        nconv, before, after;
  PetscReal       lambda;
  LossHessianType type;
  PetscLogDouble  t0, t1;

  PetscFunctionBegin;
  if (tr->sharpnessevery <= 0 || epoch % tr->sharpnessevery) PetscFunctionReturn(0);
  PetscCall(PetscTime(&t0));
  if (!tr->sharpness) {
    const char *prefix;
    PetscBool   has;
    PetscInt    size;
    EPS         eps;

    PetscCall(SpectrumCreate(comm, &tr->sharpness));
    PetscCall(PetscObjectGetOptionsPrefix((PetscObject)tr, &prefix));
    PetscCall(SpectrumSetOptionsPrefix(tr->sharpness, prefix));
    PetscCall(SpectrumAppendOptionsPrefix(tr->sharpness, "trainer_"));
    PetscCall(DatasetGetSize(tr->train, &size));
    tr->sharpnesssamples = PetscMin(tr->sharpnesssamples, size);
    PetscCall(SpectrumSetNet(tr->sharpness, tr->net));
    PetscCall(SpectrumSetLoss(tr->sharpness, tr->loss));
    PetscCall(SpectrumSetDataset(tr->sharpness, tr->train, tr->sharpnesssamples));
    PetscCall(NetHasSecondOrder(tr->net, &has, NULL));
    PetscCall(SpectrumSetHessianType(tr->sharpness, has ? LOSS_HESSIAN_EXACT : LOSS_HESSIAN_GN));
    PetscCall(SpectrumGetEPS(tr->sharpness, &eps));
    PetscCall(EPSSetTolerances(eps, 1e-6, PETSC_DEFAULT)); /* a monitor: 6 digits are plenty */
    PetscCall(SpectrumSetFromOptions(tr->sharpness));
  }
  PetscCall(SpectrumGetNumOperatorApplications(tr->sharpness, &before));
  PetscCall(SpectrumComputeEigenvalues(tr->sharpness, 1, &nconv, &lambda));
  PetscCall(SpectrumGetNumOperatorApplications(tr->sharpness, &after));
  PetscCall(SpectrumGetHessianType(tr->sharpness, &type));
  PetscCall(PetscTime(&t1));
  if (nconv)
    PetscCall(PetscPrintf(comm, "epoch %3" PetscInt_FMT " sharpness: lambda_max %.6e of the %s (%" PetscInt_FMT " training samples, %" PetscInt_FMT " products, %.2fs)\n", epoch, (double)lambda,
                          type == LOSS_HESSIAN_EXACT ? "Hessian" : "Gauss-Newton matrix", tr->sharpnesssamples, after - before, t1 - t0));
  else
    PetscCall(PetscPrintf(comm, "epoch %3" PetscInt_FMT " sharpness: EPS did not converge (raise -trainer_spectrum_eps_max_it)\n", epoch));
  PetscFunctionReturn(0);
}
