/* The built-in layer kinds: one line each. */
#include <petnet/private/layerimpl.h>

PETSC_INTERN PetscErrorCode LayerCreate_Dense(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Identity(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_ReLU(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_LeakyReLU(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Tanh(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Sigmoid(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_GELU(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Softplus(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Conv2d(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Conv3d(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_MaxPool(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_AvgPool(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_GlobalAvgPool(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Flatten(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Dropout(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_BatchNorm(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Add(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Concat(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Upsample(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_ConvTranspose2d(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_GCN(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_SAGE(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Mpnn(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_LayerNorm(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_RMSNorm(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Embedding(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Attention(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Reshape(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Permute(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Einsum(Layer);
PETSC_INTERN PetscErrorCode LayerCreate_Position(Layer);

/*@C
  LayerRegisterAll - registers the built-in layer kinds: dense, identity, relu, leakyrelu, tanh, sigmoid, gelu,
  softplus, conv2d, conv3d, maxpool, avgpool, globalavgpool, flatten, dropout, batchnorm, add, concat, upsample,
  convtranspose2d, the graph layers gcn and sage, the mesh message-passing layer mpnn and the transformer layers
  layernorm, rmsnorm, embedding, attention and position, and the tensor-shape kinds reshape, permute and einsum. Idempotent.

  Not collective

  Notes:
  PetNetInitializePackage() calls it. The ode kind belongs to the TS package, which registers it (NetTSRegisterAll()).

  Level: developer

.seealso: `LayerRegister()`, `PetNetInitializePackage()`, `LayerSetType()`
@*/
PetscErrorCode LayerRegisterAll(void)
{
  PetscFunctionBegin;
  if (LayerRegisterAllCalled) PetscFunctionReturn(0);
  LayerRegisterAllCalled = PETSC_TRUE;
  PetscCall(LayerRegister(LAYERDENSE, LayerCreate_Dense));
  PetscCall(LayerRegister(LAYERIDENTITY, LayerCreate_Identity));
  PetscCall(LayerRegister(LAYERRELU, LayerCreate_ReLU));
  PetscCall(LayerRegister(LAYERLEAKYRELU, LayerCreate_LeakyReLU));
  PetscCall(LayerRegister(LAYERTANH, LayerCreate_Tanh));
  PetscCall(LayerRegister(LAYERSIGMOID, LayerCreate_Sigmoid));
  PetscCall(LayerRegister(LAYERGELU, LayerCreate_GELU));
  PetscCall(LayerRegister(LAYERSOFTPLUS, LayerCreate_Softplus));
  PetscCall(LayerRegister(LAYERCONV2D, LayerCreate_Conv2d));
  PetscCall(LayerRegister(LAYERCONV3D, LayerCreate_Conv3d));
  PetscCall(LayerRegister(LAYERMAXPOOL, LayerCreate_MaxPool));
  PetscCall(LayerRegister(LAYERAVGPOOL, LayerCreate_AvgPool));
  PetscCall(LayerRegister(LAYERGLOBALAVGPOOL, LayerCreate_GlobalAvgPool));
  PetscCall(LayerRegister(LAYERFLATTEN, LayerCreate_Flatten));
  PetscCall(LayerRegister(LAYERDROPOUT, LayerCreate_Dropout));
  PetscCall(LayerRegister(LAYERBATCHNORM, LayerCreate_BatchNorm));
  PetscCall(LayerRegister(LAYERADD, LayerCreate_Add));
  PetscCall(LayerRegister(LAYERCONCAT, LayerCreate_Concat));
  PetscCall(LayerRegister(LAYERUPSAMPLE, LayerCreate_Upsample));
  PetscCall(LayerRegister(LAYERCONVTRANSPOSE2D, LayerCreate_ConvTranspose2d));
  PetscCall(LayerRegister(LAYERGCN, LayerCreate_GCN));
  PetscCall(LayerRegister(LAYERSAGE, LayerCreate_SAGE));
  PetscCall(LayerRegister(LAYERMPNN, LayerCreate_Mpnn));
  PetscCall(LayerRegister(LAYERLAYERNORM, LayerCreate_LayerNorm));
  PetscCall(LayerRegister(LAYERRMSNORM, LayerCreate_RMSNorm));
  PetscCall(LayerRegister(LAYEREMBEDDING, LayerCreate_Embedding));
  PetscCall(LayerRegister(LAYERATTENTION, LayerCreate_Attention));
  PetscCall(LayerRegister(LAYERRESHAPE, LayerCreate_Reshape));
  PetscCall(LayerRegister(LAYERPERMUTE, LayerCreate_Permute));
  PetscCall(LayerRegister(LAYEREINSUM, LayerCreate_Einsum));
  PetscCall(LayerRegister(LAYERPOSITION, LayerCreate_Position));
  PetscFunctionReturn(0);
}
