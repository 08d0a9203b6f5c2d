/*
  gelu's passes on one element type, included once per type by activations.c (the formulas there):
    GELU_T        the values' type: PetscScalar, or float (a Net at -net_precision single, and bfloat16 widened to float)
    GELU_NAME(f)  f itself, or fSingle
    GELU_ERF(x), GELU_EXP(x)   PetNet's own erf and exp in that type (petnet/private/mathimpl.h)
    GELU_SECOND_ORDER          defined for the double pass only: the second-order adjoint's curvature term
    GELU_BF16                  defined for the float pass only: the kernels on stored bfloat16 values
  The loops, side by side (x, y, dx, dy, xdot, dxdot: [n][size]; no parameters), on the entries [i0, i1):
    forward     y[i]      = f(x[i])                  f(x)   = x Phi(x),   Phi(x) = (1 + erf(x/sqrt 2))/2
    backward    dx[i]     = f'(x[i]) dy[i]           f'(x)  = Phi(x) + x phi(x),   phi(x) = e^(-x^2/2)/sqrt(2 pi)
    jvp         dy[i]     = f'(x[i]) dx[i]
    sobackward  dxdot[i] += f''(x[i]) xdot[i] dy[i]  f''(x) = (2 - x^2) phi(x)   (ACCUMULATES)
  Each loop is compiled for AVX-512, AVX2 and the baseline (POINTWISE_TARGET_CLONES, fp-contract=off: the same bits on
  any CPU) and vectorizes whole, erf and exp inlined; POINTWISE_BLOCKS runs it on blocks on PetNet's threads, each
  block calling the clone. In place (x == y, dy == dx) works: an entry is read before it is written, and GCC's
  aliasing check lets equal arrays take the vector loop.
*/
PETNET_MATH_INLINE GELU_T GELU_NAME(GELUValue)(GELU_T x)
{
  return (GELU_T)0.5 * x * ((GELU_T)1 + GELU_ERF(x * (GELU_T)0.70710678118654752440));
}

PETNET_MATH_INLINE GELU_T GELU_NAME(GELUSlope)(GELU_T x)
{
  return (GELU_T)0.5 * ((GELU_T)1 + GELU_ERF(x * (GELU_T)0.70710678118654752440)) + x * GELU_EXP((GELU_T)-0.5 * x * x) * (GELU_T)0.39894228040143267794;
}

static POINTWISE_TARGET_CLONES void GELU_NAME(GELUForwardRange)(PetscInt i0, PetscInt i1, const GELU_T *x, GELU_T *y)
{
  for (PetscInt i = i0; i < i1; i++) y[i] = GELU_NAME(GELUValue)(x[i]);
}

/* out = f'(x) in: backward (in = dy, out = dx) and jvp (in = dx, out = dy) */
static POINTWISE_TARGET_CLONES void GELU_NAME(GELUSlopeRange)(PetscInt i0, PetscInt i1, const GELU_T *x, const GELU_T *in, GELU_T *out)
{
  for (PetscInt i = i0; i < i1; i++) out[i] = GELU_NAME(GELUSlope)(x[i]) * in[i];
}

static PetscErrorCode GELU_NAME(LayerForward_GELU)(Layer layer, PetscInt n, const PetscScalar *theta, const GELU_T *x, GELU_T *y)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;

  POINTWISE_BLOCKS(N, GELU_NAME(GELUForwardRange)(i0, i1, x, y));
  return PetscLogFlops(pw->flops_f * N);
}

static PetscErrorCode GELU_NAME(LayerBackward_GELU)(Layer layer, PetscInt n, const PetscScalar *theta, const GELU_T *x, const GELU_T *y, const GELU_T *dy, GELU_T *dx, PetscScalar *dtheta)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;

  if (!dx) return 0;
  POINTWISE_BLOCKS(N, GELU_NAME(GELUSlopeRange)(i0, i1, x, dy, dx));
  return PetscLogFlops((pw->flops_df + 1) * N);
}

static PetscErrorCode GELU_NAME(LayerJVP_GELU)(Layer layer, PetscInt n, const PetscScalar *theta, const GELU_T *x, const GELU_T *y, const GELU_T *dx, const PetscScalar *dtheta, GELU_T *dy)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;

  POINTWISE_BLOCKS(N, GELU_NAME(GELUSlopeRange)(i0, i1, x, dx, dy));
  return PetscLogFlops((pw->flops_df + 1) * N);
}

#if defined(GELU_BF16)
/*
  bfloat16 on the stored values (Layer.ops forwardbf16, backwardmaskbf16, jvpbf16; layerbf16.c), float instantiation
  only: each entry is the float kernel's on the widened values, rounded once (bf16impl.h), so a Net gives the same bits
  as when its executor streams widened copies through the float kernels, without the copies. No activation is fused
  into gelu (the Net passes it none).
    x, y, dx, dy   [n][size] bfloat16 (uint16_t)
*/
/* a chunk of 256 entries widened into float scratch on the stack (1 KiB, in L1), the float loop run on it and rounded
   back: separate loops that each vectorize (one loop doing all three does not: GCC leaves it scalar) */
#define GELU_BF16_CHUNK 256

static POINTWISE_TARGET_CLONES void GELUForwardRangeBF16(PetscInt i0, PetscInt i1, const uint16_t *x, uint16_t *y)
{
  float t[GELU_BF16_CHUNK];

  for (PetscInt c0 = i0; c0 < i1; c0 += GELU_BF16_CHUNK) {
    const PetscInt  c  = PetscMin(GELU_BF16_CHUNK, i1 - c0);
    const uint16_t *xs = x + c0;
    uint16_t       *ys = y + c0;
    float *restrict tf = t;

    for (PetscInt i = 0; i < c; i++) tf[i] = PetNetBF16ToFloat(xs[i]);
    for (PetscInt i = 0; i < c; i++) tf[i] = GELUValueSingle(tf[i]);
    for (PetscInt i = 0; i < c; i++) ys[i] = PetNetFloatToBF16(tf[i]);
  }
}

static POINTWISE_TARGET_CLONES void GELUSlopeRangeBF16(PetscInt i0, PetscInt i1, const uint16_t *x, const uint16_t *in, uint16_t *out)
{
  float t[GELU_BF16_CHUNK], u[GELU_BF16_CHUNK];

  for (PetscInt c0 = i0; c0 < i1; c0 += GELU_BF16_CHUNK) {
    const PetscInt  c  = PetscMin(GELU_BF16_CHUNK, i1 - c0);
    const uint16_t *xs = x + c0, *ins = in + c0;
    uint16_t       *os = out + c0;
    float *restrict tf = t, *restrict uf = u;

    for (PetscInt i = 0; i < c; i++) tf[i] = PetNetBF16ToFloat(xs[i]);
    for (PetscInt i = 0; i < c; i++) uf[i] = PetNetBF16ToFloat(ins[i]);
    for (PetscInt i = 0; i < c; i++) tf[i] = GELUSlopeSingle(tf[i]) * uf[i];
    for (PetscInt i = 0; i < c; i++) os[i] = PetNetFloatToBF16(tf[i]);
  }
}

static PetscErrorCode LayerForwardBF16_GELU(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, uint16_t *y)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;

  PetscCheck(!act, PETSC_COMM_SELF, PETSC_ERR_PLIB, "gelu layer %" PetscInt_FMT ": no activation is fused into it", layer->index);
  POINTWISE_BLOCKS(N, GELUForwardRangeBF16(i0, i1, x, y));
  return PetscLogFlops(pw->flops_f * N);
}

static PetscErrorCode LayerBackwardBF16_GELU(Layer layer, Layer act, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dy, uint16_t *dx, PetscScalar *dtheta)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;

  PetscCheck(!act, PETSC_COMM_SELF, PETSC_ERR_PLIB, "gelu layer %" PetscInt_FMT ": no activation's derivative is applied in its backward pass", layer->index);
  if (!dx) return 0;
  POINTWISE_BLOCKS(N, GELUSlopeRangeBF16(i0, i1, x, dy, dx));
  return PetscLogFlops((pw->flops_df + 1) * N);
}

static PetscErrorCode LayerJVPBF16_GELU(Layer layer, PetscInt n, const PetscScalar *theta, const uint16_t *x, const uint16_t *y, const uint16_t *dx, const PetscScalar *dtheta, uint16_t *dy)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;

  if (!dx) return PetscArrayzero(dy, (size_t)N);
  POINTWISE_BLOCKS(N, GELUSlopeRangeBF16(i0, i1, x, dx, dy));
  return PetscLogFlops((pw->flops_df + 1) * N);
}
#endif

#if defined(GELU_SECOND_ORDER)
PETNET_MATH_INLINE GELU_T GELU_NAME(GELUCurvature)(GELU_T x)
{
  return ((GELU_T)2 - x * x) * GELU_EXP((GELU_T)-0.5 * x * x) * (GELU_T)0.39894228040143267794;
}

static POINTWISE_TARGET_CLONES void GELU_NAME(GELUCurvatureRange)(PetscInt i0, PetscInt i1, const GELU_T *x, const GELU_T *xdot, const GELU_T *dy, GELU_T *dxdot)
{
  for (PetscInt i = i0; i < i1; i++) dxdot[i] += GELU_NAME(GELUCurvature)(x[i]) * xdot[i] * dy[i];
}

static PetscErrorCode GELU_NAME(LayerSOBackward_GELU)(Layer layer, PetscInt n, const PetscScalar *theta, const GELU_T *x, const GELU_T *y, const GELU_T *xdot, const PetscScalar *thetadot, const GELU_T *ydot, const GELU_T *dy, GELU_T *dxdot,
                                                      PetscScalar *dthetadot)
{
  Layer_Pointwise *pw = (Layer_Pointwise *)layer->data;
  const PetscInt   N  = n * layer->insize;

  if (!xdot || !dxdot) return 0;
  POINTWISE_BLOCKS(N, GELU_NAME(GELUCurvatureRange)(i0, i1, x, xdot, dy, dxdot));
  return PetscLogFlops((pw->flops_d2f + 3) * N);
}
#endif
