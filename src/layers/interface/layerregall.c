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
  PetscFunctionReturn(0);
}
