/*
  einsum's forward, backward and jvp on nin = nops inputs (the derivation in einsum.c's opening comment), on one element
  type, included once per type by einsum.c:
    EIN_T           PetscScalar or float: the values x[k], y, dx[k], dy (theta and dtheta are double either way; einsum
                    has no parameters)
    EIN_PASS(p)     the pass's name: Layer<p>N_Einsum (double: forwardn, backwardn, jvpn) or Layer<p>NSingle_Einsum
                    (float: forwardnsingle, backwardnsingle, jvpnsingle)
    EIN_CONTRACT    EinsumContract or EinsumContractSingle (einsum.h)
    EIN_BACKEND(l)  the backend of the contractions' GEMMs: PETNET_GEMM_NATIVE in double, the layer's l->gemm in float
*/

/* y = fwd(x0, x1); one input: y = fwd(x0) */
static PetscErrorCode EIN_PASS(Forward)(Layer layer, PetscInt n, const PetscScalar *theta, const EIN_T *const x[], EIN_T *y)
{
  Layer_Einsum *es = (Layer_Einsum *)layer->data;
  void         *work;

  PetscFunctionBegin;
  PetscCall(EinsumGetWork(layer, n, sizeof(EIN_T), &work));
  PetscCall(EIN_CONTRACT(&es->fwd, EIN_BACKEND(layer), n, x[0], es->nops == 2 ? x[1] : NULL, PETSC_FALSE, y, (EIN_T *)work));
  PetscFunctionReturn(0);
}

/* dx0 = bwd[0](dy, x1), dx1 = bwd[1](dy, x0); one input: dx0 = bwd[0](dy) */
static PetscErrorCode EIN_PASS(Backward)(Layer layer, PetscInt n, const PetscScalar *theta, const EIN_T *const x[], const EIN_T *y, const EIN_T *dy, EIN_T *const dx[], PetscScalar *dtheta)
{
  Layer_Einsum *es = (Layer_Einsum *)layer->data;
  void         *work;

  PetscFunctionBegin;
  PetscCall(EinsumGetWork(layer, n, sizeof(EIN_T), &work));
  for (PetscInt k = 0; k < es->nops; k++)
    if (dx[k]) PetscCall(EIN_CONTRACT(&es->bwd[k], EIN_BACKEND(layer), n, dy, es->nops == 2 ? x[1 - k] : NULL, PETSC_FALSE, dx[k], (EIN_T *)work));
  PetscFunctionReturn(0);
}

/* dy = fwd(dx0, x1) + fwd(x0, dx1), the second added to the first in EIN_T (a NULL tangent contributes nothing) */
static PetscErrorCode EIN_PASS(JVP)(Layer layer, PetscInt n, const PetscScalar *theta, const EIN_T *const x[], const EIN_T *y, const EIN_T *const dx[], const PetscScalar *dtheta, EIN_T *dy)
{
  Layer_Einsum *es    = (Layer_Einsum *)layer->data;
  PetscBool     wrote = PETSC_FALSE;
  void         *work;

  PetscFunctionBegin;
  PetscCall(EinsumGetWork(layer, n, sizeof(EIN_T), &work));
  if (es->nops == 1) {
    if (dx[0]) PetscCall(EIN_CONTRACT(&es->fwd, EIN_BACKEND(layer), n, dx[0], NULL, PETSC_FALSE, dy, (EIN_T *)work));
    wrote = (PetscBool)(dx[0] != NULL);
  } else {
    if (dx[0]) PetscCall(EIN_CONTRACT(&es->fwd, EIN_BACKEND(layer), n, dx[0], x[1], PETSC_FALSE, dy, (EIN_T *)work));
    if (dx[1]) PetscCall(EIN_CONTRACT(&es->fwd, EIN_BACKEND(layer), n, x[0], dx[1], (PetscBool)(dx[0] != NULL), dy, (EIN_T *)work));
    wrote = (PetscBool)(dx[0] || dx[1]);
  }
  if (!wrote) PetscCall(PetscArrayzero(dy, n * layer->outsize));
  PetscFunctionReturn(0);
}
