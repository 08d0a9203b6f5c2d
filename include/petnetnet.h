/* Net: an ordered sequence of layers, its parameters, its Jacobians. */
#pragma once

#include <petnetlayer.h>

PETSC_EXTERN PetscClassId NET_CLASSID;

PETSC_EXTERN PetscErrorCode NetInitializePackage(void);
PETSC_EXTERN PetscErrorCode NetFinalizePackage(void);
PETSC_EXTERN PetscErrorCode NetCreate(MPI_Comm, Net *);
PETSC_EXTERN PetscErrorCode NetSetInputShape(Net, const PetNetShape *);
PETSC_EXTERN PetscErrorCode NetGetInputShape(Net, PetNetShape *);
PETSC_EXTERN PetscErrorCode NetGetOutputShape(Net, PetNetShape *);
PETSC_EXTERN PetscErrorCode NetSetLayers(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetAddLayer(Net, LayerType, const char[], Layer *);
PETSC_EXTERN PetscErrorCode NetGetNumLayers(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode NetGetLayer(Net, PetscInt, Layer *);
PETSC_EXTERN PetscErrorCode NetGetSpec(Net, size_t, char[]);
PETSC_EXTERN PetscErrorCode NetSetSeed(Net, unsigned long);
PETSC_EXTERN PetscErrorCode NetSetFromOptions(Net);
PETSC_EXTERN PetscErrorCode NetSetUp(Net);
PETSC_EXTERN PetscErrorCode NetSetTraining(Net, PetscBool);
PETSC_EXTERN PetscErrorCode NetGetTraining(Net, PetscBool *);
PETSC_EXTERN PetscErrorCode NetView(Net, PetscViewer);
PETSC_EXTERN PetscErrorCode NetViewFromOptions(Net, PetscObject, const char[]);
PETSC_EXTERN PetscErrorCode NetReset(Net);
PETSC_EXTERN PetscErrorCode NetDestroy(Net *);

/* Parameters: one flat Vec distributed over the communicator; layer l owns [offset_l, offset_l + p_l). */
PETSC_EXTERN PetscErrorCode NetGetNumParameters(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode NetGetParameters(Net, Vec *);
PETSC_EXTERN PetscErrorCode NetSetParameters(Net, Vec);
PETSC_EXTERN PetscErrorCode NetCreateParameterVec(Net, Vec *);
PETSC_EXTERN PetscErrorCode NetInitializeParameters(Net);
PETSC_EXTERN PetscErrorCode NetGetLayerParameterRange(Net, PetscInt, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode NetGetParameterBroadcast(Net, Mat *);

/* Batches: sample-major Vecs; nlocal samples on this rank. */
PETSC_EXTERN PetscErrorCode NetCreateVecs(Net, PetscInt, Vec *, Vec *);
PETSC_EXTERN PetscErrorCode NetGetBatchSize(Net, PetscInt *, PetscInt *);

/* Y = f(X; theta), keeping the linearization point. */
PETSC_EXTERN PetscErrorCode NetForward(Net, Vec, Vec);
/* dX = J_x^T dY (dX may be NULL); G += J_theta^T dY (G may be NULL). */
PETSC_EXTERN PetscErrorCode NetBackward(Net, Vec, Vec, Vec);
/* dY = J_x dX + J_theta dtheta (either may be NULL, meaning zero). */
PETSC_EXTERN PetscErrorCode NetJVP(Net, Vec, Vec, Vec);

/* MATSHELLs at the last forward pass, owned by the Net (do not destroy): MatMult = JVP, MatMultTranspose = VJP. */
PETSC_EXTERN PetscErrorCode NetGetJacobian(Net, Mat *);
PETSC_EXTERN PetscErrorCode NetGetJacobianP(Net, Mat *);

/* Derivative checks on the user's own network: dot-product tests and central finite differences. */
PETSC_EXTERN PetscErrorCode NetTestJacobian(Net, Vec, PetscViewer, PetscReal *, PetscReal *);

/* Save and load architecture + parameters (PetscViewer binary or HDF5). */
PETSC_EXTERN PetscErrorCode NetSave(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetLoad(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetWrite(Net, PetscViewer);
PETSC_EXTERN PetscErrorCode NetRead(Net, PetscViewer);
