/*
  Net: a directed acyclic graph of layers, its parameters, its Jacobians.

  Written as a chain (NetSetLayers(), -net_layers):  dense:256,relu,residual(dense:256,relu,dense:256),dense:10
    where residual(F) means y = x + F(x) and residual(F|P) means y = P(x) + F(x), with F and P layer lists.
  Written as a graph (NetSetGraph(), -net_graph): named nodes and their inputs, "input" being the Net's input,
    stem = conv2d:8:3:1:1; a = relu; b = conv2d:8:3:1:1 <- a; sum = add <- b, stem; cat = concat <- sum, input; ...
  Both give the same nodes: layers with one input, and joins (add, concat) with several. A node's output may feed
  several nodes; the last node is the Net's output.
*/
#pragma once

#include <petnetlayer.h>

typedef struct _p_Net *Net;

PETSC_EXTERN PetscClassId NET_CLASSID;

PETSC_EXTERN PetscErrorCode NetInitializePackage(void);
PETSC_EXTERN PetscErrorCode NetFinalizePackage(void);
PETSC_EXTERN PetscErrorCode NetCreate(MPI_Comm, Net *);

/* How the parameters and the work of a Net are spread over its ranks (NetSetParallel(), -net_parallel) */
typedef enum {
  NET_PARALLEL_REPLICATED, /* data parallel; every rank computes with a full copy of the parameters */
  NET_PARALLEL_SHARDED,    /* data parallel; each node's parameters gathered just before it runs, gradients reduce-scattered (ZeRO-3) */
  NET_PARALLEL_MODEL,      /* dense and conv2d nodes split over all ranks (model / channel-filter parallel), the rest sharded */
  NET_PARALLEL_TENSOR,     /* Megatron: dense:N:tokens and attention nodes split over a tensor group (heads, MLP pairs), the rest sharded */
  NET_PARALLEL_SEQUENCE,   /* the tokens of a sequence batch (N, T, C) split over groups of ranks, parameters replicated */
  NET_PARALLEL_SUBGRAPH    /* the independent branches of a graph on disjoint groups of ranks, the other nodes data parallel on all */
} NetParallelType;
PETSC_EXTERN const char *const NetParallelTypes[];
PETSC_EXTERN PetscErrorCode    NetSetParallel(Net, NetParallelType);
PETSC_EXTERN PetscErrorCode    NetSetTensorRanks(Net, PetscInt);
PETSC_EXTERN PetscErrorCode    NetGetTensorRanks(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode    NetSetSequenceRanks(Net, PetscInt);
/* Placement (netplace.c): pipeline stages on groups of ranks, micro-batches, the schedule */
typedef enum {
  NET_PIPELINE_GPIPE, /* every micro-batch's forward, then every backward */
  NET_PIPELINE_1F1B   /* PipeDream-flush: one forward, one backward (not built yet) */
} NetPipelineSchedule;
PETSC_EXTERN const char *const NetPipelineSchedules[];
PETSC_EXTERN PetscErrorCode    NetSetStages(Net, PetscInt);
PETSC_EXTERN PetscErrorCode    NetGetStages(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode    NetSetMicroBatches(Net, PetscInt);
PETSC_EXTERN PetscErrorCode    NetGetMicroBatches(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode    NetSetPipelineSchedule(Net, NetPipelineSchedule);
PETSC_EXTERN PetscErrorCode    NetGetPipelineSchedule(Net, NetPipelineSchedule *);
PETSC_EXTERN PetscErrorCode    NetSetNodePlacement(Net, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode    NetGetNodePlacement(Net, PetscInt, PetscInt *);
PETSC_EXTERN PetscErrorCode    NetSetNodeRanks(Net, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode    NetGetNodeRanks(Net, PetscInt, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode    NetGetPipelineTimes(Net, PetscLogDouble *, PetscLogDouble *);
PETSC_EXTERN PetscErrorCode    NetTestMoves(Net, PetscReal *);
/* Grid mode (netspatial.c): a Net on the fields of a 2-D or 3-D DMDA, spatially parallel, and samples x space groups */
PETSC_EXTERN PetscErrorCode NetSetGrid(Net, DM);
PETSC_EXTERN PetscErrorCode NetGetGrid(Net, DM *);
PETSC_EXTERN PetscErrorCode NetSetSpatialGroups(Net, PetscInt);
PETSC_EXTERN PetscErrorCode NetSetSpatialOverlap(Net, PetscBool);
PETSC_EXTERN PetscErrorCode NetGetSpatialComm(Net, MPI_Comm *);
PETSC_EXTERN PetscErrorCode NetCreateOutputLayout(Net, PetscInt, PetNetLayout *);
PETSC_EXTERN PetscErrorCode NetGetParallel(Net, NetParallelType *);
PETSC_EXTERN PetscErrorCode NetSetNodePartition(Net, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode NetGetNodePartition(Net, PetscInt, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode NetSetInputShape(Net, const PetNetShape *);
PETSC_EXTERN PetscErrorCode NetGetInputShape(Net, PetNetShape *);
PETSC_EXTERN PetscErrorCode NetGetOutputShape(Net, PetNetShape *);
PETSC_EXTERN PetscErrorCode NetSetLayers(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetSetGraph(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetAddLayer(Net, LayerType, const char[], Layer *);
PETSC_EXTERN PetscErrorCode NetGetNumLayers(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode NetGetLayer(Net, PetscInt, Layer *);
PETSC_EXTERN PetscErrorCode NetGetLayerName(Net, PetscInt, const char **);
PETSC_EXTERN PetscErrorCode NetGetLayerInputs(Net, PetscInt, PetscInt *, const PetscInt *[]);
PETSC_EXTERN PetscErrorCode NetSetOptionsPrefix(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetAppendOptionsPrefix(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetGetOptionsPrefix(Net, const char *[]);
PETSC_EXTERN PetscErrorCode NetGetSpec(Net, size_t, char[]);
PETSC_EXTERN PetscErrorCode NetSetSeed(Net, unsigned long);
PETSC_EXTERN PetscErrorCode NetSetForwardCache(Net, PetscInt);
PETSC_EXTERN PetscErrorCode NetGetForwardCacheSize(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode NetGetForwardCacheStats(Net, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode NetSetFromOptions(Net);
PETSC_EXTERN PetscErrorCode NetSetUp(Net);
PETSC_EXTERN PetscErrorCode NetSetTraining(Net, PetscBool);
PETSC_EXTERN PetscErrorCode NetGetTraining(Net, PetscBool *);
/* The precision of a Net's values (activations, their tangents and cotangents) and of the arithmetic of its layers
   (NetSetPrecision(), -net_precision). Parameters, gradients, losses, optimizers and the public Vecs stay double. */
typedef enum {
  NET_PRECISION_DOUBLE,  /* everything in double */
  NET_PRECISION_SINGLE,  /* values in float, float kernels (sgemm) */
  NET_PRECISION_BFLOAT16 /* values stored in bfloat16 (a quarter of double's memory), computed in float */
} NetPrecision;
PETSC_EXTERN const char *const NetPrecisions[];
PETSC_EXTERN PetscErrorCode    NetSetPrecision(Net, NetPrecision);
PETSC_EXTERN PetscErrorCode    NetGetPrecision(Net, NetPrecision *);
PETSC_EXTERN PetscErrorCode    NetSetBFloat16Kernels(Net, PetscBool);
PETSC_EXTERN PetscErrorCode    NetGetBFloat16Kernels(Net, PetscBool *);
/* Who runs the GEMMs of the float kernels (single and bfloat16) of a Net's layers (NetSetBackend(), -net_backend);
   double always runs on BLAS and PetNet's own loops */
typedef enum {
  NET_BACKEND_NATIVE, /* BLAS (sgemm) and PetNet's own loops */
  NET_BACKEND_ONEDNN  /* oneDNN's matmul (the default when PetNet is built with oneDNN), native where oneDNN has no fast kernel */
} NetBackend;
PETSC_EXTERN const char *const NetBackends[];
PETSC_EXTERN PetscErrorCode    NetSetBackend(Net, NetBackend);
PETSC_EXTERN PetscErrorCode    NetGetBackend(Net, NetBackend *);
PETSC_EXTERN PetscErrorCode    NetGetBackendKernels(Net, size_t, char[], char[], char[]);
PETSC_EXTERN PetscErrorCode    NetSetFusion(Net, PetscBool);
PETSC_EXTERN PetscErrorCode    NetGetFusion(Net, PetscBool *);
PETSC_EXTERN PetscErrorCode    NetView(Net, PetscViewer);
PETSC_EXTERN PetscErrorCode    NetViewFromOptions(Net, PetscObject, const char[]);
PETSC_EXTERN PetscErrorCode    NetReset(Net);
PETSC_EXTERN PetscErrorCode    NetDestroy(Net *);

/* Parameters: one flat Vec distributed over the communicator; layer (node) l owns [offset_l, offset_l + p_l). */
PETSC_EXTERN PetscErrorCode NetGetNumParameters(Net, PetscInt *);
PETSC_EXTERN PetscErrorCode NetGetParameters(Net, Vec *);
PETSC_EXTERN PetscErrorCode NetSetParameters(Net, Vec);
PETSC_EXTERN PetscErrorCode NetCreateParameterVec(Net, Vec *);
PETSC_EXTERN PetscErrorCode NetInitializeParameters(Net);
PETSC_EXTERN PetscErrorCode NetGetLayerParameterRange(Net, PetscInt, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode NetGetParameterBroadcast(Net, Mat *);

/* Batches: sample-major Vecs; nlocal samples on this rank. */
PETSC_EXTERN PetscErrorCode NetCreateVecs(Net, PetscInt, Vec *, Vec *);
/* Graph layers (gcn, sage): their sparse operator, rows = nodes = the samples (LayerGraphSetOperator()) */
PETSC_EXTERN PetscErrorCode NetSetGraphOperator(Net, Mat);
/* Mesh message-passing layers (mpnn): their DMPlex, vertices = the samples (LayerMeshSetDM()) */
PETSC_EXTERN PetscErrorCode NetSetMeshDM(Net, DM);
PETSC_EXTERN PetscErrorCode NetGetBatchSize(Net, PetscInt *, PetscInt *);

/* Y = f(X; theta), keeping the linearization point. */
PETSC_EXTERN PetscErrorCode NetForward(Net, Vec, Vec);
PETSC_EXTERN PetscErrorCode NetForwardBackward(Net, Vec, PetscErrorCode (*)(Net, PetscInt, PetscInt, const PetscScalar[], PetscScalar[], void *), void *, Vec, Vec, Vec);
/* dX = J_x^T dY (dX may be NULL); G += J_theta^T dY (G may be NULL). */
PETSC_EXTERN PetscErrorCode NetBackward(Net, Vec, Vec, Vec);
/* dY = J_x dX + J_theta dtheta (either may be NULL, meaning zero). */
PETSC_EXTERN PetscErrorCode NetJVP(Net, Vec, Vec, Vec);
PETSC_EXTERN PetscErrorCode NetGetNodeArraysRead(Net, PetscInt, PetscInt *, const PetscScalar **, const PetscScalar **);
PETSC_EXTERN PetscErrorCode NetRestoreNodeArraysRead(Net, PetscInt, PetscInt *, const PetscScalar **, const PetscScalar **);
PETSC_EXTERN PetscErrorCode NetGetNodePatches(Net, PetscInt, PetscInt *, const PetscScalar **); /* conv2d, conv3d: [rows][G][kernel][Cin/G], rows as the output (grid mode: the halo box) */
PETSC_EXTERN PetscErrorCode NetRestoreNodePatches(Net, PetscInt, PetscInt *, const PetscScalar **);

/* MATSHELLs at the last forward pass, owned by the Net (do not destroy): MatMult = JVP, MatMultTranspose = VJP. */
/* Second-order adjoint (forward-over-reverse) at the last NetForward, along the tangents of the last NetJVP: */
PETSC_EXTERN PetscErrorCode NetSecondOrderBackward(Net, Vec, Vec, Vec, Vec); /* dY, dYdot, dXdot (or NULL), Hv (accumulated) */
PETSC_EXTERN PetscErrorCode NetHasSecondOrder(Net, PetscBool *, PetscInt *); /* every node has a second-order kernel; else the first that has none */
PETSC_EXTERN PetscErrorCode NetGetJacobian(Net, Mat *);
PETSC_EXTERN PetscErrorCode NetCreateJacobianBlockDiagonal(Net, Mat *);
PETSC_EXTERN PetscErrorCode NetGetJacobianP(Net, Mat *);
/* The same for layer (node) l alone: its inputs (concatenated, for a join) -> its output; its own parameters -> its output */
PETSC_EXTERN PetscErrorCode NetGetLayerJacobian(Net, PetscInt, Mat *);
PETSC_EXTERN PetscErrorCode NetGetLayerJacobianP(Net, PetscInt, Mat *);

/* Derivative checks on the user's own network: dot-product tests and central finite differences. */
PETSC_EXTERN PetscErrorCode NetTestJacobian(Net, Vec, PetscViewer, PetscReal *, PetscReal *);

/* Save and load architecture + parameters (PetscViewer binary or HDF5). */
PETSC_EXTERN PetscErrorCode NetSave(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetLoad(Net, const char[]);
PETSC_EXTERN PetscErrorCode NetWrite(Net, PetscViewer);
PETSC_EXTERN PetscErrorCode NetRead(Net, PetscViewer);
PETSC_EXTERN PetscErrorCode NetSetSaveFile(Net, const char[]); /* what -net_save sets; NULL: no save */
PETSC_EXTERN PetscErrorCode NetSaveFromOptions(Net);           /* -net_save FILE; TrainerTrain() calls it, NetDestroy() at the latest */

/* The input normalisation x -> (scale x - mean) / std the Net was trained with; recorded in model files. */
PETSC_EXTERN PetscErrorCode NetSetInputNormalization(Net, PetscReal, PetscReal, PetscReal);
PETSC_EXTERN PetscErrorCode NetGetInputNormalization(Net, PetscBool *, PetscReal *, PetscReal *, PetscReal *);
