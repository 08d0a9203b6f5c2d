/* Layer: one operator y = f(x; theta) with its Jacobian (JVP) and adjoint (VJP). */
#pragma once

#include <petnetsys.h>
#include <petscdm.h>

typedef struct _p_Layer *Layer;

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
PETSC_EXTERN PetscErrorCode LayerSetGemmThinRows(PetscInt);
PETSC_EXTERN PetscErrorCode LayerGetGemmThinRows(PetscInt *);
PETSC_EXTERN PetscErrorCode LayerCreate(MPI_Comm, Layer *);
PETSC_EXTERN PetscErrorCode LayerSetType(Layer, LayerType);
PETSC_EXTERN PetscErrorCode LayerGetType(Layer, LayerType *);
PETSC_EXTERN PetscErrorCode LayerSetArguments(Layer, const char[]);
PETSC_EXTERN PetscErrorCode LayerGetSpec(Layer, size_t, char[]);
PETSC_EXTERN PetscErrorCode LayerSetFromOptions(Layer);
PETSC_EXTERN PetscErrorCode LayerSetInputShape(Layer, const PetNetShape *);
PETSC_EXTERN PetscErrorCode LayerSetInputShapes(Layer, PetscInt, const PetNetShape[]);
PETSC_EXTERN PetscErrorCode LayerGetInputShape(Layer, PetNetShape *);
PETSC_EXTERN PetscErrorCode LayerGetNumInputs(Layer, PetscInt *, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode LayerGetOutputShape(Layer, PetNetShape *);
PETSC_EXTERN PetscErrorCode LayerGetNumParameters(Layer, PetscInt *);
PETSC_EXTERN PetscErrorCode LayerSetUp(Layer);
PETSC_EXTERN PetscErrorCode LayerSetTraining(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerSetFrozen(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerSetIndex(Layer, PetscInt);
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
/* The same for any number of inputs (x[k], dx[k]: one array per input) */
PETSC_EXTERN PetscErrorCode LayerSOBackwardArray(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerHasSecondOrder(Layer, PetscBool *);
PETSC_EXTERN PetscErrorCode LayerForwardArrays(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerSOBackwardArrays(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *const[],
                                                  PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerBackwardArrays(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *, PetscScalar *const[], PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerJVPArrays(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *const[], const PetscScalar *, PetscScalar *);

/* The same kernels on float values, parameters in double (-net_precision single, NetSetPrecision()) */
PETSC_EXTERN PetscErrorCode LayerForwardSingle(Layer, PetscInt, const PetscScalar *, const float *const[], float *);
PETSC_EXTERN PetscErrorCode LayerBackwardSingle(Layer, PetscInt, const PetscScalar *, const float *const[], const float *, const float *, float *const[], PetscScalar *);
PETSC_EXTERN PetscErrorCode LayerJVPSingle(Layer, PetscInt, const PetscScalar *, const float *const[], const float *, const float *const[], const PetscScalar *, float *);
PETSC_EXTERN PetscErrorCode LayerHasSingle(Layer, PetscBool *);

/* Kind-specific settings */
PETSC_EXTERN PetscErrorCode LayerDenseSetOutputSize(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerDenseSetInitialization(Layer, LayerInitType, PetscReal);
PETSC_EXTERN PetscErrorCode LayerDenseSetBias(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerDenseSetTokens(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerDenseGetTokens(Layer, PetscBool *, PetscInt *, PetscInt *);
PETSC_EXTERN PetscErrorCode LayerLeakyReLUSetSlope(Layer, PetscReal);

/* Convolutional kinds: inputs are (h, w, c) channels-last unless noted, (d, h, w, c) for conv3d and 3-D pools; a Net on
   a DMDA (NetSetGrid(), NetDMDASetUp()) applies them to the distributed fields, input (c) at each grid point */
#define LAYERCONV2D        "conv2d"        /* conv2d:OUT[:K[:STRIDE[:PAD[:D[:G]]]]][:dilation=D][:groups=G][:bias=0|1], K as 3 or 3x5 */
#define LAYERCONV3D        "conv3d"        /* conv3d:OUT[:K[:STRIDE[:PAD[:D[:G]]]]][:dilation=D][:groups=G][:bias=0|1], K as 3 or 3x3x5, on (d, h, w, c) */
#define LAYERMAXPOOL       "maxpool"       /* maxpool:K[:STRIDE[:PAD[:DILATION]]], stride defaults to K; K as 2, 2x3 or 2x3x3; 2-D or 3-D by the input */
#define LAYERAVGPOOL       "avgpool"       /* avgpool:K[:STRIDE[:PAD]], padding counted in the mean (PyTorch's default) */
#define LAYERGLOBALAVGPOOL "globalavgpool" /* (h, w, c) or (d, h, w, c) -> (c) */
#define LAYERFLATTEN       "flatten"       /* (h, w, c) -> (h*w*c), (d, h, w, c) -> (d*h*w*c), channels-last order (PyTorch's flatten of NCHW is (c, h, w)) */
#define LAYERDROPOUT       "dropout"       /* dropout:P, active in training mode only */
#define LAYERBATCHNORM     "batchnorm"     /* batchnorm[:MOMENTUM[:EPS]], over the last dimension (channels) */
#define LAYERLAYERNORM     "layernorm"     /* layernorm[:noaffine][:eps=EPS], each position over the last dimension (features) */
#define LAYERRMSNORM       "rmsnorm"       /* rmsnorm[:noaffine][:eps=EPS], y = gamma x / sqrt(mean(x^2) + eps) over the last dimension */
#define LAYEREMBEDDING     "embedding"     /* embedding:V:E, token ids (T) -> rows of a V x E table (T, E) */
#define LAYERATTENTION     "attention"     /* attention:H[:causal], multi-head self-attention on (T, E) -> (T, E) (nn.MultiheadAttention) */
#define LAYERPOSITION      "position"      /* position:T[:sinusoidal], a table of positions added to a sequence (T', E), T' <= T */

/* Tensor-shape kinds (issue 32): a sample's dims relabelled, reordered or contracted; no parameters. In a layer list
   write arguments holding commas in parentheses: permute(1,0), einsum(ij->ji) */
#define LAYERRESHAPE "reshape" /* reshape:AxBxC, the same entries in another shape of up to 5 dims, one may be -1 (inferred) */
#define LAYERPERMUTE "permute" /* permute:i,j,k, y's dim d is x's dim p[d] (0-based, torch.permute without the batch dim) */
#define LAYEREINSUM  "einsum"  /* einsum:SPEC, one input (tij->tji, ij->i) or two as a join (bqd,bkd->bqk); the batch dim is implicit */

PETSC_EXTERN PetscErrorCode LayerConv2dSetOutputChannels(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetKernel(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetStride(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetPadding(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetDilation(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetGroups(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv2dSetBias(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerConv2dSetInitialization(Layer, LayerInitType, PetscReal);
PETSC_EXTERN PetscErrorCode LayerConv2dGetPatchLayout(Layer, PetscInt *, PetscInt *, PetscInt *, PetscBool *); /* groups, KH KW Cin/G, Ho Wo, bias */
PETSC_EXTERN PetscErrorCode LayerConv2dGetPatches(Layer, PetscInt, const PetscScalar[], PetscScalar[]);        /* im2col: [n Ho Wo][G][KH][KW][Cin/G] */

PETSC_EXTERN PetscErrorCode LayerConv3dSetOutputChannels(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv3dSetKernel(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv3dSetStride(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv3dSetPadding(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv3dSetDilation(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv3dSetGroups(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConv3dSetBias(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerConv3dSetInitialization(Layer, LayerInitType, PetscReal);
PETSC_EXTERN PetscErrorCode LayerConv3dGetPatchLayout(Layer, PetscInt *, PetscInt *, PetscInt *, PetscBool *); /* groups, KD KH KW Cin/G, Do Ho Wo, bias */
PETSC_EXTERN PetscErrorCode LayerConv3dGetPatches(Layer, PetscInt, const PetscScalar[], PetscScalar[]);        /* vol2col: [n Do Ho Wo][G][KD][KH][KW][Cin/G] */

PETSC_EXTERN PetscErrorCode LayerPoolSetKernel(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetStride(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetPadding(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetKernel3d(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetStride3d(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetPadding3d(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetDilation(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerPoolSetDilation3d(Layer, PetscInt, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerDropoutSetProbability(Layer, PetscReal);
PETSC_EXTERN PetscErrorCode LayerDropoutSetSeed(Layer, PetscInt64);
PETSC_EXTERN PetscErrorCode LayerAttentionSetQueryBlock(Layer, PetscInt, PetscInt); /* the queries [q0, q0 + nq) against all T keys */
PETSC_EXTERN PetscErrorCode LayerBatchNormSetMomentum(Layer, PetscReal);
PETSC_EXTERN PetscErrorCode LayerBatchNormSetEpsilon(Layer, PetscReal);
PETSC_EXTERN PetscErrorCode LayerBatchNormGetNumBatchesTracked(Layer, PetscInt64 *);
PETSC_EXTERN PetscErrorCode LayerBatchNormSetNumBatchesTracked(Layer, PetscInt64);

/* Joins: layers with several inputs, the nodes of a graph where branches meet (NetSetGraph()) */
#define LAYERADD    "add"    /* y = x_1 + ... + x_k, all inputs of one shape (the join of a residual block) */
#define LAYERCONCAT "concat" /* y = [x_1, ..., x_k] along the last dimension (channels; U-Net skip connections) */

/* Upsampling: (h, w, c) -> (h sh, w sw, c) and (d, h, w, c) -> (d sd, h sh, w sw, c) by integer factors, as PyTorch's
   nn.Upsample(scale_factor=S, mode=..., align_corners=False); also a node of a Net on a 2-D or 3-D grid */
#define LAYERUPSAMPLE "upsample" /* upsample:S[:MODE], S as 2, 2x3 or 2x2x2, MODE nearest (the default) or linear */

typedef enum {
  LAYER_UPSAMPLE_NEAREST, /* each output point copies the input point it falls in (PyTorch's mode='nearest') */
  LAYER_UPSAMPLE_LINEAR   /* bilinear on (h, w, c), trilinear on (d, h, w, c), half-pixel centres, edges clamped */
} LayerUpsampleMode;
PETSC_EXTERN const char *const LayerUpsampleModes[];

PETSC_EXTERN PetscErrorCode LayerUpsampleSetScale(Layer, PetscInt, const PetscInt[]);
PETSC_EXTERN PetscErrorCode LayerUpsampleGetScale(Layer, PetscInt *, PetscInt[]);
PETSC_EXTERN PetscErrorCode LayerUpsampleSetMode(Layer, LayerUpsampleMode);
PETSC_EXTERN PetscErrorCode LayerUpsampleGetMode(Layer, LayerUpsampleMode *);

/* Transposed convolution (PyTorch's ConvTranspose2d; the adjoint of conv2d's map from its input to its output):
   (H, W, Cin) -> (Ho, Wo, Cout), Ho = (H - 1) stride - 2 padding + dilation (K - 1) + output_padding + 1 */
#define LAYERCONVTRANSPOSE2D "convtranspose2d" /* convtranspose2d:OUT[:K[:STRIDE[:PAD]]][:output_padding=P][:dilation=D][:groups=G][:bias=0|1] */

PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetOutputChannels(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetKernel(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetStride(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetPadding(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetOutputPadding(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetDilation(Layer, PetscInt, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetGroups(Layer, PetscInt);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetBias(Layer, PetscBool);
PETSC_EXTERN PetscErrorCode LayerConvTranspose2dSetInitialization(Layer, LayerInitType, PetscReal);

/* Graph layers: a sample is a node of a graph, its features channels-last, and the layer mixes nodes through the user's
   sparse operator A (an assembled MATSEQAIJ/MATMPIAIJ, rows = nodes, LayerGraphSetOperator()), applied by MatMult of
   MatCreateMAIJ(A, channels); the local batch on each rank is exactly A's local rows */
#define LAYERGCN  "gcn"  /* gcn:C[:bias=0|1]    Y = A X Wn^T + b            (PyTorch Geometric's GCNConv with A given) */
#define LAYERSAGE "sage" /* sage:C[:bias=0|1]   Y = X Ws^T + (A X) Wn^T + b (SAGEConv, with the aggregation A X) */

PETSC_EXTERN PetscErrorCode LayerGraphSetOperator(Layer, Mat);
PETSC_EXTERN PetscErrorCode LayerGraphGetOperator(Layer, Mat *);

/* Mesh message passing (MeshGraphNets' processor): a sample is a vertex of a DMPlex (the rank's owned vertices, in the
   DM's global order); every mesh edge sends a message both ways, m_sr = tanh(We [x_s; x_r; p_r - p_s; |p_r - p_s|] + be),
   summed at the receiver, y_r = Wn [x_r; a_r] + bn; ghosts through the DM's point SF (LayerMeshSetDM()) */
#define LAYERMPNN "mpnn" /* mpnn:C[:hidden=H][:dim=D]   H message channels (default C), D the coordinate dimension (2) */

PETSC_EXTERN PetscErrorCode LayerMeshSetDM(Layer, DM);
PETSC_EXTERN PetscErrorCode LayerMeshGetDM(Layer, DM *);
