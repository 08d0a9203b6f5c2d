/* Layer: one operator y = f(x; theta) with its Jacobian (JVP) and adjoint (VJP). */
#pragma once

#include <petnetsys.h>

typedef struct _p_Layer *Layer;
typedef struct _p_Net   *Net;

typedef const char *LayerType;
#define LAYERDENSE     "dense"
#define LAYERIDENTITY  "identity"
#define LAYERRELU      "relu"
#define LAYERLEAKYRELU "leakyrelu"
#define LAYERTANH      "tanh"
#define LAYERSIGMOID   "sigmoid"
#define LAYERGELU      "gelu"
#define LAYERSOFTPLUS  "softplus"

/* How a dense (or convolution) layer initialises its weights; biases start at zero. */
typedef enum {
  LAYER_INIT_KAIMING, /* N(0, 2/fan_in), for ReLU networks (PyTorch: kaiming_normal_) */
  LAYER_INIT_XAVIER,  /* U(-a, a), a = sqrt(6/(fan_in+fan_out)) (Glorot uniform) */
  LAYER_INIT_NORMAL,  /* N(0, std^2), std from -<prefix>dense_init_std */
  LAYER_INIT_ZEROS
} LayerInitType;
PETSC_EXTERN const char *const LayerInitTypes[];

PETSC_EXTERN PetscClassId      LAYER_CLASSID;
PETSC_EXTERN PetscFunctionList LayerList;

PETSC_EXTERN PetscErrorCode LayerInitializePackage(void);
PETSC_EXTERN PetscErrorCode LayerFinalizePackage(void);
PETSC_EXTERN PetscErrorCode LayerCreate(MPI_Comm, Layer *);
PETSC_EXTERN PetscErrorCode LayerSetType(Layer, LayerType);
PETSC_EXTERN PetscErrorCode LayerGetType(Layer, LayerType *);
PETSC_EXTERN PetscErrorCode LayerSetArguments(Layer, const char[]);
PETSC_EXTERN PetscErrorCode LayerGetSpec(Layer, size_t, char[]);
PETSC_EXTERN PetscErrorCode LayerSetFromOptions(Layer);
PETSC_EXTERN PetscErrorCode LayerSetInputShape(Layer, const PetNetShape *);
PETSC_EXTERN PetscErrorCode LayerGetInputShape(Layer, PetNetShape *);
PETSC_EXTERN PetscErrorCode LayerGetOutputShape(Layer, PetNetShape *);
PETSC_EXTERN PetscErrorCode LayerGetNumParameters(Layer, PetscInt *);
PETSC_EXTERN PetscErrorCode LayerSetUp(Layer);
PETSC_EXTERN PetscErrorCode LayerView(Layer, PetscViewer);
PETSC_EXTERN PetscErrorCode LayerReset(Layer);
PETSC_EXTERN PetscErrorCode LayerDestroy(Layer *);
PETSC_EXTERN PetscErrorCode LayerRegister(const char[], PetscErrorCode (*)(Layer));
PETSC_EXTERN PetscErrorCode LayerRegisterAll(void);

/* Array-level kernels over a local batch of n samples (see include/petnet/private/layerimpl.h for the contract). */
PETSC_EXTERN PetscErrorCode LayerInitializeParameters(Layer, PetscRandom, PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerInitializeWeights(PetscRandom, LayerInitType, PetscReal, PetscReal, PetscReal, PetscInt, PetscScalar[]);
PETSC_EXTERN PetscErrorCode LayerForwardArray(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerBackwardArray(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerJVPArray(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);

/* Jacobians of a layer inside its Net, at the Net's last forward pass.
   LayerGetJacobian:  dX (layer input batch)      -> dY;  MatMultTranspose: dY -> dX.
   LayerGetJacobianP: dtheta_l (this layer's own parameters, distributed) -> dY; transpose: dY -> dtheta_l.
   The Mats are owned by the layer: do not destroy them. */
PETSC_EXTERN PetscErrorCode LayerGetJacobian(Layer, Mat *);
PETSC_EXTERN PetscErrorCode LayerGetJacobianP(Layer, Mat *);

/* Kind-specific settings */
PETSC_EXTERN PetscErrorCode LayerDenseSetOutputSize(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerDenseSetInitialization(Layer, LayerInitType, PetscReal);
PETSC_EXTERN PetscErrorCode LayerLeakyReLUSetSlope(Layer, PetscReal);

/* Convolutional kinds: inputs are (h, w, c) channels-last unless noted; conv2d also convolves the fields of a 2-D DMDA,
   input (c) at each grid point (grid mode: LayerConv2dSetDM() in petnetdmda.h) */
#define LAYERCONV2D        "conv2d"        /* conv2d:OUT[:K[:STRIDE[:PAD]]][:dilation=D][:groups=G][:bias=0|1], K as 3 or 3x5 */
#define LAYERMAXPOOL       "maxpool"       /* maxpool:K[:STRIDE[:PAD]], stride defaults to K */
#define LAYERAVGPOOL       "avgpool"       /* avgpool:K[:STRIDE[:PAD]], padding counted in the mean (PyTorch's default) */
#define LAYERGLOBALAVGPOOL "globalavgpool" /* (h, w, c) -> (c) */
#define LAYERFLATTEN       "flatten"       /* (h, w, c) -> (h*w*c) in channels-last order (PyTorch's flatten of NCHW is (c, h, w)) */
#define LAYERDROPOUT       "dropout"       /* dropout:P, active in training mode only */
#define LAYERBATCHNORM     "batchnorm"     /* batchnorm[:MOMENTUM[:EPS]], over the last dimension (channels) */

PETSC_EXTERN PetscErrorCode LayerConv2dSetOutputChannels(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetKernel(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetStride(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetPadding(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetDilation(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetGroups(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetBias(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerConv2dSetInitialization(Layer, LayerInitType, PetscReal);
PETSC_EXTERN PetscErrorCode LayerPoolSetKernel(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetStride(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetPadding(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerDropoutSetProbability(Layer, PetscReal);
PETSC_EXTERN PetscErrorCode LayerDropoutSetSeed(Layer, PetscInt64);
PETSC_EXTERN PetscErrorCode LayerBatchNormSetMomentum(Layer, PetscReal);
PETSC_EXTERN PetscErrorCode LayerBatchNormSetEpsilon(Layer, PetscReal);

/* Residual block: y = x + F(x), or y = P(x) + F(x) with a projection shortcut P; F and P are layer lists */
#define LAYERRESIDUAL "residual" /* residual(F) or residual(F|P), e.g. residual(conv2d:16:3:1:1,relu,conv2d:16:3:1:1|conv2d:16:1:1:0) */

PETSC_EXTERN PetscErrorCode LayerResidualSetBranches(Layer, const char[], const char[]);
PETSC_EXTERN PetscErrorCode LayerResidualGetBranches(Layer, Net *, Net *);

#define LAYERODE "ode" /* ode[:T]: y = u(T), du/dt = f(u) with f an inner Net (-<prefix>ode_net_layers); see petnetts.h */
