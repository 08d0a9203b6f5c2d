/*
  Spectrum: spectra of a network with SLEPc, at its current parameters.

    curvature      the k largest eigenvalues of the Hessian or the Gauss-Newton matrix of the mean loss over a batch
                   (LossCreateNetHessian(); any symmetric Mat given by SpectrumSetOperator() instead): SLEPc EPS,
                   Krylov-Schur on the shell by default, options -<prefix>eps_* (e.g. -spectrum_eps_type power)
    trace          Hutchinson's estimate tr(H) ~ mean of z^T H z over Rademacher probes z
    density        stochastic Lanczos quadrature: per probe, k Lanczos steps with full reorthogonalisation; the
                   eigenvalues (nodes) and squared first components (weights) of the tridiagonal matrix are a Gauss
                   quadrature of the spectral density
    Jacobian       per sample, the largest and smallest singular values of the Net's input Jacobian (SLEPc SVD on
                   NetGetJacobian()'s shell): the largest is the local Lipschitz constant of the network at that sample
    weights        the singular values of every dense and conv2d weight (LAPACK), dense as out x in, conv2d as
                   Cout x (Cin/groups kh kw), also inside ode layers
    ode stiffness  for each ode layer, the eigenvalues of the right-hand side's Jacobian J_f(u) (LAPACK, dense) at the
                   states of the recorded time steps of one sample's trajectory, and the stiffness ratio
                   max|Re l| / min|Re l|; above -<prefix>stiffness_warn an explicit integrator is warned about

  Random probes are Rademacher vectors drawn by a hash of (seed, probe, global index): the same on any number of
  ranks, so results agree to round-off on 1, 2 and 4 ranks.
*/
#pragma once

#include <petnetloss.h>
#include <petnetdataset.h>
#include <slepceps.h>

typedef struct _p_Spectrum *Spectrum;

PETSC_EXTERN PetscClassId SPECTRUM_CLASSID;

PETSC_EXTERN PetscErrorCode SpectrumInitializePackage(void);
PETSC_EXTERN PetscErrorCode SpectrumFinalizePackage(void);
PETSC_EXTERN PetscErrorCode SpectrumCreate(MPI_Comm, Spectrum *);
PETSC_EXTERN PetscErrorCode SpectrumSetNet(Spectrum, Net);
PETSC_EXTERN PetscErrorCode SpectrumSetLoss(Spectrum, Loss);
PETSC_EXTERN PetscErrorCode SpectrumSetBatch(Spectrum, Vec, Vec);            /* X, T (referenced) */
PETSC_EXTERN PetscErrorCode SpectrumSetDataset(Spectrum, Dataset, PetscInt); /* its first N samples (source order) */
PETSC_EXTERN PetscErrorCode SpectrumGetBatch(Spectrum, Vec *, Vec *);
PETSC_EXTERN PetscErrorCode SpectrumSetHessianType(Spectrum, LossHessianType); /* -spectrum_hessian gn|exact */
PETSC_EXTERN PetscErrorCode SpectrumGetHessianType(Spectrum, LossHessianType *);
PETSC_EXTERN PetscErrorCode SpectrumSetOperator(Spectrum, Mat); /* any symmetric operator instead */
PETSC_EXTERN PetscErrorCode SpectrumGetOperator(Spectrum, Mat *);
PETSC_EXTERN PetscErrorCode SpectrumGetNumOperatorApplications(Spectrum, PetscInt *);
PETSC_EXTERN PetscErrorCode SpectrumSetSeed(Spectrum, unsigned long);
PETSC_EXTERN PetscErrorCode SpectrumSetOptionsPrefix(Spectrum, const char[]);
PETSC_EXTERN PetscErrorCode SpectrumAppendOptionsPrefix(Spectrum, const char[]);
PETSC_EXTERN PetscErrorCode SpectrumGetOptionsPrefix(Spectrum, const char *[]);
PETSC_EXTERN PetscErrorCode SpectrumSetFromOptions(Spectrum);
PETSC_EXTERN PetscErrorCode SpectrumSetUp(Spectrum);
PETSC_EXTERN PetscErrorCode SpectrumGetEPS(Spectrum, EPS *);
PETSC_EXTERN PetscErrorCode SpectrumView(Spectrum, PetscViewer);
PETSC_EXTERN PetscErrorCode SpectrumViewFromOptions(Spectrum, PetscObject, const char[]);
PETSC_EXTERN PetscErrorCode SpectrumReset(Spectrum);
PETSC_EXTERN PetscErrorCode SpectrumDestroy(Spectrum *);

/* Curvature: PETSC_DEFAULT counts take the options' values (-spectrum_k, -spectrum_probes, -spectrum_lanczos_steps) */
PETSC_EXTERN PetscErrorCode SpectrumComputeEigenvalues(Spectrum, PetscInt, PetscInt *, PetscReal[]);                    /* k; nconv, eig[k] descending */
PETSC_EXTERN PetscErrorCode SpectrumComputeTrace(Spectrum, PetscInt, PetscReal *, PetscReal *);                         /* probes; trace, standard error */
PETSC_EXTERN PetscErrorCode SpectrumComputeDensity(Spectrum, PetscInt, PetscInt, PetscInt *, PetscReal[], PetscReal[]); /* probes, steps; n, nodes[], weights[] (probes*steps) */
PETSC_EXTERN PetscErrorCode SpectrumDensityEvaluate(PetscInt, const PetscReal[], const PetscReal[], PetscReal, PetscInt, const PetscReal[], PetscReal[]);

/* The network's own spectra */
PETSC_EXTERN PetscErrorCode SpectrumComputeJacobianSingularValues(Spectrum, PetscInt, PetscReal[], PetscReal[]); /* samples; smax[], smin[] */
PETSC_EXTERN PetscErrorCode SpectrumComputeWeightSingularValues(Spectrum, PetscInt *);
PETSC_EXTERN PetscErrorCode SpectrumGetWeightSingularValues(Spectrum, PetscInt, const char *[], PetscInt *, PetscInt *, const PetscReal *[]);
PETSC_EXTERN PetscErrorCode SpectrumComputeODEStiffness(Spectrum, PetscInt *, PetscReal *, PetscBool *); /* ode layers, largest ratio, warned */
