/* Private: the Net object. */
#pragma once

#include <petnet/private/layerimpl.h>

struct _NetOps {
  PetscErrorCode (*dummy)(Net);
};

struct _p_Net {
  PETSCHEADER(struct _NetOps);
  PetNetShape   in;
  PetscInt      nlayers, maxlayers;
  Layer        *layers;
  PetscInt     *poff; /* poff[l] .. poff[l+1]: parameters of layer l */
  PetscInt      nparams;
  PetscBool     setupcalled;
  unsigned long seed;

  /* Parameters: theta is distributed (each rank owns a slice); the layers read the replicated copy theta_rep,
     refreshed by the broadcast whenever theta's state changes. grad_rep collects this rank's gradient. */
  Vec              theta, theta_rep, dtheta_rep, grad_rep;
  Mat              bcast;
  PetscObjectState theta_state;
  PetscBool        theta_rep_valid;

  /* Workspace for a batch of nlocal samples on this rank (N in all): act[l] is the input of layer l,
     act[nlayers] the output; dact[l] the tangent or cotangent at the same place. */
  PetscInt         nlocal, nglobal;
  Vec             *act, *dact;
  PetscBool        forwarded;
  PetscObjectState input_state; /* act[0] is the caller's input Vec (referenced, not copied): its state at NetForward */
  Mat              J, JP;

  PetscBool training; /* see NetSetTraining() */
  PetscBool testjacobian, intest;
};

PETSC_INTERN PetscErrorCode NetSetUpWorkspace_Private(Net, Vec);
PETSC_INTERN PetscErrorCode NetResetWorkspace_Private(Net);
PETSC_INTERN PetscErrorCode NetCheckInputUnchanged_Private(Net);
PETSC_INTERN PetscErrorCode NetUpdateReplicatedParameters_Private(Net);
PETSC_INTERN PetscErrorCode NetLayerJVP_Private(Net, PetscInt, Vec, Vec, Vec);
PETSC_INTERN PetscErrorCode NetLayerBackward_Private(Net, PetscInt, Vec, Vec, Vec);
PETSC_INTERN PetscErrorCode NetLayerListNext_Private(char **, char **);
