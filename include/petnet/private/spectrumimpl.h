/* Private: the Spectrum object (analysis of a Net's spectra with SLEPc). */
#pragma once

#include <petnetspectrum.h>
#include <petsc/private/petscimpl.h>

PETSC_EXTERN PetscLogEvent SPECTRUM_Eigenvalues, SPECTRUM_Trace, SPECTRUM_Density, SPECTRUM_Jacobian, SPECTRUM_Weights, SPECTRUM_ODE;

/* The singular values of one weight, as a rows x cols matrix */
typedef struct {
  char       name[256]; /* state_dict key, e.g. "0.weight", "2.net.0.weight" */
  char       kind[16];  /* dense, conv2d */
  PetscInt   rows, cols;
  PetscReal *sv; /* min(rows, cols), descending */
} SpectrumWeight;

/* One ode layer's right-hand side along a trajectory: per recorded state k, the real parts' extremes and |l|max */
typedef struct {
  PetscInt   node;      /* its node in the outer Net */
  char       name[256]; /* node name */
  char       integrator[64];
  char       tsprefix[256];
  PetscBool  implicit;
  PetscInt   size;    /* state entries per sample (the Jacobian is size x size) */
  PetscInt   nstates; /* states analysed (0: skipped, too large) */
  PetscReal *times, *maxre, *minre, *rho, *dt, *ratio;
  PetscInt  *nzero; /* eigenvalues with |Re l| negligible, left out of min|Re l| */
  PetscReal  maxratio, maxhrho;
} SpectrumODE;

struct _p_Spectrum {
  PETSCHEADER(int); /* no operations: one kind of Spectrum */
  Net             net;
  Loss            loss;
  Vec             X, T; /* the batch (referenced) */
  LossHessianType htype;
  Mat             H;      /* the user's operator (SpectrumSetOperator()) or the Net's Hessian, made at set-up */
  PetscBool       user;   /* H came from SpectrumSetOperator() */
  Mat             Hc;     /* H behind a counting shell: what EPS and the probes apply */
  PetscInt        napply; /* applications of Hc since creation */
  EPS             eps;
  PetscBool       fromoptions, setupcalled;

  /* settings */
  PetscInt      k, nprobes, nslq, nsteps, njac, chunk;
  unsigned long seed;
  PetscReal     stiffwarn;
  PetscInt      odemaxsize, odemaxstates;
  PetscInt      densitygrid;
  PetscReal     densitysigma;

  /* results of the last computation of each kind, for SpectrumView() (time: seconds; apply: operator applications) */
  PetscInt        neig, nconv, eigits, eigapply;
  PetscReal      *eig, *eigerr;
  PetscLogDouble  eigtime;
  PetscBool       hastrace;
  PetscReal       trace, tracese;
  PetscInt        traceprobes, traceapply;
  PetscLogDouble  tracetime;
  PetscInt        ndensity, densityprobes, densitysteps, densityapply;
  PetscReal      *nodes, *weights, densitytrace;
  PetscLogDouble  densitytime;
  PetscInt        njacres;
  PetscReal      *jmax, *jmin;
  PetscLogDouble  jactime;
  PetscInt        nweights;
  SpectrumWeight *weight;
  PetscLogDouble  weighttime;
  PetscInt        nstiff; /* ode layers analysed */
  SpectrumODE    *ode;
  PetscLogDouble  odetime;
};

PETSC_INTERN PetscErrorCode SpectrumRademacher_Private(Spectrum, PetscInt, Vec);
PETSC_INTERN PetscErrorCode SpectrumBeginAnalysis_Private(Spectrum, PetscBool *);
PETSC_INTERN PetscErrorCode SpectrumEndAnalysis_Private(Spectrum, PetscBool);
PETSC_INTERN PetscErrorCode SpectrumGetSample_Private(Spectrum, PetscInt, Vec);
PETSC_INTERN PetscErrorCode SpectrumResetWeights_Private(Spectrum);
PETSC_INTERN PetscErrorCode SpectrumResetODE_Private(Spectrum);
PETSC_INTERN PetscErrorCode SpectrumViewWeights_Private(Spectrum, PetscViewer);
PETSC_INTERN PetscErrorCode SpectrumViewODE_Private(Spectrum, PetscViewer);
