/* Weight initialisation shared by the layer kinds with weights (dense, conv2d, ...). */
#include <petnet/private/layerimpl.h>

/*@C
  LayerInitializeWeights - fills a weight tensor with random values for a given fan-in and fan-out; the kinds with
  weights (dense, conv2d, ...) share it

  Not collective

  Input Parameters:
+ rnd    - the random generator, uniform on [0, 1)
. init   - the distribution: `LAYER_INIT_KAIMING`, `LAYER_INIT_XAVIER`, `LAYER_INIT_NORMAL` or `LAYER_INIT_ZEROS` (see Notes)
. std    - the standard deviation of `LAYER_INIT_NORMAL` (the other distributions ignore it)
. fanin  - the fan-in, inputs per output (a dense layer's input size)
. fanout - the fan-out (a dense layer's number of outputs), used by `LAYER_INIT_XAVIER`
- n      - the number of entries

  Output Parameter:
. w - the n weights

  Notes:
.vb
    LAYER_INIT_KAIMING  N(0, 2/fan_in)                          (PyTorch kaiming_normal_, for ReLU networks)
    LAYER_INIT_XAVIER   U(-a, a), a = sqrt(6/(fan_in+fan_out))  (Glorot uniform)
    LAYER_INIT_NORMAL   N(0, std^2)
    LAYER_INIT_ZEROS    0
.ve
  Normal draws use Box-Muller on pairs of uniform draws of rnd, so the values depend only on rnd's seed and state.
  LAYER_INIT_ZEROS draws nothing.

  Level: developer

.seealso: `LayerInitializeParameters()`, `LayerDenseSetInitialization()`, `NetInitializeParameters()`
@*/
PetscErrorCode LayerInitializeWeights(PetscRandom rnd, LayerInitType init, PetscReal std, PetscReal fanin, PetscReal fanout, PetscInt n, PetscScalar w[])
{
  PetscFunctionBegin;
  switch (init) {
  case LAYER_INIT_KAIMING:
  case LAYER_INIT_NORMAL:
    if (init == LAYER_INIT_KAIMING) std = PetscSqrtReal(2.0 / fanin);
    for (PetscInt i = 0; i < n; i += 2) {
      PetscReal u1, u2, r;

      PetscCall(PetscRandomGetValueReal(rnd, &u1));
      PetscCall(PetscRandomGetValueReal(rnd, &u2));
      r    = PetscSqrtReal(-2.0 * PetscLogReal(1.0 - u1)); /* u1 in [0,1): 1 - u1 > 0 */
      w[i] = std * r * PetscCosReal(2.0 * PETSC_PI * u2);
      if (i + 1 < n) w[i + 1] = std * r * PetscSinReal(2.0 * PETSC_PI * u2);
    }
    break;
  case LAYER_INIT_XAVIER: {
    PetscReal a = PetscSqrtReal(6.0 / (fanin + fanout));

    for (PetscInt i = 0; i < n; i++) {
      PetscReal u;

      PetscCall(PetscRandomGetValueReal(rnd, &u));
      w[i] = a * (2.0 * u - 1.0);
    }
  } break;
  case LAYER_INIT_ZEROS:
    PetscCall(PetscArrayzero(w, n));
    break;
  }
  PetscFunctionReturn(0);
}
