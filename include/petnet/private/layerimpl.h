/* Private: the Layer object and the contract every layer kind keeps. */
#pragma once

#include <petnetlayer.h>
#include <petsc/private/petscimpl.h>
#include <petnet/private/threadsimpl.h>
#include <petnet/private/onednnimpl.h>
#include <petnet/private/bf16impl.h>

PETSC_EXTERN PetscBool LayerRegisterAllCalled;

/*
  The kernels work on the LOCAL batch: n samples, sample-major, channels-last.
    x     [n][in]   layer input  (in  = product of the input shape)
    y     [n][out]  layer output (out = product of the output shape)
    theta [p]       this layer's own parameters, as its owner hands them over (a view of the layer's block: the
                    kernel must not assume anything about the memory around it)

  forward(n, theta, x, y):                          y = f(x; theta); keep what the derivatives need
  backward(n, theta, x, y, dy, dx, dtheta):         dx  = J_x^T dy      (skip if dx == NULL)
                                                    dtheta += J_theta^T dy  ACCUMULATES (skip if NULL)
  jvp(n, theta, x, y, dx, dtheta, dy):              dy  = J_x dx + J_theta dtheta  (NULL means zero)

  backward and jvp are called after forward with the same n, theta, x and y (the linearization point).

  sobackward(n, theta, x, y, xdot, thetadot, ydot, dy, dxdot, dthetadot):   the curvature term of the second-order
                                                    adjoint: the derivative of backward's outputs along the tangent
                                                    (xdot, thetadot) with the cotangent dy held fixed,
                        dxdot     += d/de [J_x    (x + e xdot, theta + e thetadot)^T dy]   ACCUMULATES (skip if NULL)
                        dthetadot += d/de [J_theta(x + e xdot, theta + e thetadot)^T dy]   ACCUMULATES (skip if NULL)
                    xdot, thetadot may be NULL (zero); ydot = J_x xdot + J_theta thetadot is the JVP's output at the
                    same point (NULL when both are zero). The full second-order adjoint of the layer is
                    backward(dydot) + sobackward(dy): the Net adds the two (NetSecondOrderBackward()). Called after
                    forward (and backward, jvp) at the same point. A kind whose curvature term is identically zero
                    (linear in (x, theta) together, or piecewise linear: relu, pooling, add, ...) sets sozero instead;
                    a kind with neither has no exact Hessian-vector products (the Gauss-Newton operator still works).

  Kinds with several inputs (add, concat: nin > 1) implement forwardn/backwardn/jvpn instead, with arrays of the
  inputs x[k] [n][in_k] and of their (co)tangents dx[k] (a NULL dx[k] is skipped in backward and zero in jvp).
  A Layer knows nothing of the network it sits in and of how its owner runs it over the ranks: its owner (a Net) hands
  it arrays, and an activation to apply in its passes with the call (forwardact, backwardmask).
*/
/* A named tensor of a layer, for saving and for PyTorch state_dict names (key "<layer index>.<name>"). */
#define LAYER_MAX_TENSORS    16
#define LAYER_TENSOR_MAX_DIM 5 /* conv3d's weight [out][cin/groups][kd][kh][kw] */
/* How a tensor's values are ordered in PetNet, against PyTorch's order of the same shape dims[] (the model files hold
   PyTorch's order: src/net/netiotorch.c converts) */
typedef enum {
  LAYER_TENSOR_SAME,          /* as in PyTorch */
  LAYER_TENSOR_CHANNELS_LAST, /* [d0][d1][d2]...[dk] held as [d0][d2]...[dk][d1] (the second dim moved last): conv2d's
                                 [out][kh][kw][cin/groups] (4-D) and conv3d's [out][kd][kh][kw][cin/groups] (5-D) */
  LAYER_TENSOR_FEATURES       /* the last dimension indexes the layer's flat input features (dense weight [out][in],
                                 batchnorm on (f)): in PetNet's order, which is (h, w, c) where they come from a
                                 flattened (h, w, c) tensor and PyTorch's nn.Flatten gives (c, h, w) (the same for
                                 (d, h, w, c) and (c, d, h, w)); the Net knows */
} LayerTensorLayout;
typedef struct {
  char              name[32]; /* state_dict suffix: "weight", "bias", "running_mean", ... */
  PetscBool         buffer;   /* PETSC_FALSE: a slice of the layer's parameters; PETSC_TRUE: a slice of layer->buffers */
  PetscInt          offset, size;
  PetscInt          ndim, dims[LAYER_TENSOR_MAX_DIM]; /* the tensor's shape in PyTorch's layout */
  LayerTensorLayout layout;                           /* how ours differs (zero, LAYER_TENSOR_SAME, unless the kind says otherwise) */
  PetscBool         nonnegative;                      /* every value must be >= 0 (a variance): a model file holding a
                                                         negative one is refused as one holding NaN is */
} LayerTensorInfo;

typedef struct _LayerOps *LayerOps;
struct _LayerOps {
  PetscErrorCode (*setfromoptions)(Layer, PetscOptionItems *);
  PetscErrorCode (*setarguments)(Layer, const char[]); /* the part after "kind:" in -net_layers */
  PetscErrorCode (*getarguments)(Layer, size_t, char[]);
  PetscErrorCode (*setup)(Layer); /* from in: set out and nparams */
  PetscErrorCode (*initialize)(Layer, PetscRandom, PetscScalar *);
  PetscErrorCode (*forward)(Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
  PetscErrorCode (*backward)(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
  PetscErrorCode (*jvp)(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *);
  PetscErrorCode (*sobackward)(Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
  PetscErrorCode (*forwardn)(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], PetscScalar *);
  PetscErrorCode (*backwardn)(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *, PetscScalar *const[], PetscScalar *);
  PetscErrorCode (*jvpn)(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *const[], const PetscScalar *, PetscScalar *);
  /* sobackward of a join whose curvature term is not zero (a bilinear einsum): the inputs x[k], their tangents xdot[k]
     (NULL entries zero) and the cotangent tangents dxdot[k] (accumulated into; NULL entries skipped) */
  PetscErrorCode (*sobackwardn)(Layer, PetscInt, const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *const[], const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *const[], PetscScalar *);
  /* Single precision (a Net at -net_precision single or bfloat16, NetSetPrecision()): the same contract as forward,
     backward and jvp with the values x, y, dx, dy in float. The parameters stay double (the master copy): theta and
     the jvp's dtheta are read in double (a kind converts them to float where its GEMMs want them, and may keep that
     copy from forward for backward and jvp, which follow at the same point), and backward ACCUMULATES its parameter
     cotangent into the double dtheta. A kind without them (and a join without forwardnsingle...) runs its double kernels on double copies
     of its values (LayerForwardSingle() converts): every kind works at every precision, those that matter for speed
     have their own. */
  PetscErrorCode (*forwardsingle)(Layer, PetscInt, const PetscScalar *, const float *, float *);
  PetscErrorCode (*backwardsingle)(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, float *, PetscScalar *);
  PetscErrorCode (*jvpsingle)(Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, const PetscScalar *, float *);
  /* The same for a join (forwardn, backwardn, jvpn on float values): the inputs x[k] and their (co)tangents dx[k] in
     float (a NULL dx[k] skipped in backward, zero in jvp), theta and dtheta double (backward accumulates). A kind that
     sets all three has them called for any number of inputs, in place of forwardsingle... (einsum, whose one-operand
     form they cover too); a join without them runs its double kernels on double copies (layersingle.c). */
  PetscErrorCode (*forwardnsingle)(Layer, PetscInt, const PetscScalar *, const float *const[], float *);
  PetscErrorCode (*backwardnsingle)(Layer, PetscInt, const PetscScalar *, const float *const[], const float *, const float *, float *const[], PetscScalar *);
  PetscErrorCode (*jvpnsingle)(Layer, PetscInt, const PetscScalar *, const float *const[], const float *, const float *const[], const PetscScalar *, float *);
  /* bfloat16 (a Net at -net_precision bfloat16): forwardactsingle (act NULL: forwardsingle), backwardmasksingle (act
     NULL: backwardsingle) and jvpsingle on the stored bfloat16 values themselves (uint16_t, bf16impl.h), for a kind
     whose passes need no float copy of the batch: every entry written is the float kernel's entry on the widened
     values, rounded (PetNetFloatToBF16()), so a Net gives the same bits with them as without (NetSetBFloat16Kernels();
     LayerForwardBF16()). A kind sets all three or none; a kind that passes an act to neither forwardact nor
     backwardmask refuses one. */
  PetscErrorCode (*forwardbf16)(Layer, Layer, PetscInt, const PetscScalar *, const uint16_t *, uint16_t *);
  PetscErrorCode (*backwardmaskbf16)(Layer, Layer, PetscInt, const PetscScalar *, const uint16_t *, const uint16_t *, const uint16_t *, uint16_t *, PetscScalar *);
  PetscErrorCode (*jvpbf16)(Layer, PetscInt, const PetscScalar *, const uint16_t *, const uint16_t *, const uint16_t *, const PetscScalar *, uint16_t *);
  PetscErrorCode (*tensors)(Layer, PetscInt *, LayerTensorInfo[]); /* default: one tensor "weight" holding all parameters */
  /* The window of a windowed kind (convolutions, pools), for an owner that runs copies of the layer on boxes of a
     field (a Net's spatial executor, src/net/netspatial.c): getwindow gives it along each of its nsd spatial dims,
     slowest first: kernel, step (the stride in effect), padding and dilation; setpadding sets the padding, so that a
     copy without padding can run on a box (the halo supplies what the padding did). NULL: the kind has no window. */
  PetscErrorCode (*getwindow)(Layer, PetscInt *, PetscInt[], PetscInt[], PetscInt[], PetscInt[]);
  PetscErrorCode (*setpadding)(Layer, PetscInt, const PetscInt[]);
  /* forget: the input of the last forward changes in place (the halo of an overlapped exchange arrives after a first
     pass): drop whatever forward kept of it (conv's cached columns), so that backward and jvp read the input again. A
     windowed kind that sets it lets the Net overlap its halo exchange with computation; NULL: its forward keeps state
     that cannot be dropped (maxpool's argmax), so the Net exchanges the halo first. */
  PetscErrorCode (*forget)(Layer);
  /* A kind that scales a field up by an integer factor per spatial dim (upsampling): getscale gives the
     factors (the output grid is N s, a rank's output block [b s, e s) for its input block [b, e)); gridbox the box of
     the input grid [ilo, ihi) that the output block [olo, ohi) reads, given the input grid N (global coordinates,
     slowest first; the box may leave [0, N) where the kind wants the Net's zeros); setgridblock makes a local copy of
     the layer (batch mode, input shape the box) compute exactly that output block of the global layer. */
  PetscErrorCode (*getscale)(Layer, PetscInt *, PetscInt[]);
  PetscErrorCode (*gridbox)(Layer, PetscInt, const PetscInt64[], const PetscInt64[], const PetscInt64[], PetscInt64[], PetscInt64[]);
  PetscErrorCode (*setgridblock)(Layer, PetscInt, const PetscInt64[], const PetscInt64[], const PetscInt64[], const PetscInt64[], const PetscInt64[]);
  /* An activation applied inside a pass over memory the kind makes anyway, passed by the caller with each call (its
     owner decides, call by call: a Net's src/net/netfuse.c). forwardact: forward, then y = f(y) in its own output pass
     with act's activate() on each block just written (y = f(conv(x) + b)); backwardmask: backward, with dx multiplied
     by act's derivative at this layer's input x (act's output) in its own output pass, dx = f'(x) J^T dy, with act's
     activatemask(). The *single entries do the same on float values (forwardsingle, backwardsingle) with act's
     activatesingle() and activatemasksingle(). The same operations in the same order as the separate passes, so the
     same bits. NULL: the kind cannot (the owner runs the activation's own pass). */
  PetscErrorCode (*forwardact)(Layer, Layer, PetscInt, const PetscScalar *, const PetscScalar *, PetscScalar *);
  PetscErrorCode (*forwardactsingle)(Layer, Layer, PetscInt, const PetscScalar *, const float *, float *);
  PetscErrorCode (*backwardmask)(Layer, Layer, PetscInt, const PetscScalar *, const PetscScalar *, const PetscScalar *, const PetscScalar *, PetscScalar *, PetscScalar *);
  PetscErrorCode (*backwardmasksingle)(Layer, Layer, PetscInt, const PetscScalar *, const float *, const float *, const float *, float *, PetscScalar *);
  /* An activation that may be applied inside a neighbour's pass (forwardact, backwardmask above). A kind sets both when
     it may: activate(N, y) y = f(y) in place, activatemask(N, y, d) d = f'(y) d in place, on N entries, in the calling
     thread (they run inside a neighbour's parallel parts), with the same arithmetic as its forward and backward, so
     that fusing changes no bit. It promises that its derivatives at x and at f(x) agree and f(f(x)) = f(x) (relu): its
     node may then read its output where its input was. */
  PetscErrorCode (*activate)(Layer, PetscInt, PetscScalar *);
  PetscErrorCode (*activatemask)(Layer, PetscInt, const PetscScalar *, PetscScalar *);
  /* activate and activatemask on float values (a Net at low precision), with the arithmetic of the kind's forwardsingle
     and backwardsingle */
  PetscErrorCode (*activatesingle)(Layer, PetscInt, float *);
  PetscErrorCode (*activatemasksingle)(Layer, PetscInt, const float *, float *);
  PetscErrorCode (*view)(Layer, PetscViewer);
  PetscErrorCode (*reset)(Layer);
  PetscErrorCode (*destroy)(Layer);
};

typedef enum { LAYER_PHASE_FORWARD, LAYER_PHASE_BACKWARD, LAYER_PHASE_JVP, LAYER_PHASE_SOBACKWARD, LAYER_NUM_PHASES } LayerPhase;

struct _p_Layer {
  PETSCHEADER(struct _LayerOps);
  PetNetShape  in, out;         /* in: the (first) input's shape */
  PetscInt     insize, outsize; /* products of the shapes */
  PetscInt     nin;             /* number of inputs (1 unless the kind takes several) */
  PetNetShape *ins;             /* the shapes of all nin inputs (ins[0] = in) */
  PetscInt    *insizes;
  PetscInt     mininputs, maxinputs; /* what the kind accepts, set by its create (default 1 and 1) */
  PetscInt     nparams;
  PetscBool    sozero;   /* the second-order adjoint's curvature term is zero (see sobackward above) */
  PetscBool    gradfree; /* backward's parameter part (dtheta) does not read theta: called with theta == NULL and dx
                            NULL it must work, so that an owner short of memory can release the parameters first */
  PetscBool coupled;     /* at the last forward pass, one sample's output depended on other samples (graph layers; batchnorm
                            on batch statistics): the Jacobian is not block diagonal by sample (NetGetJacobian()'s diagonal) */
  PetscBool collective;  /* the kernels communicate over the layer's communicator (graph layers: their operator's MatMult),
                            so every rank enters every call, even one asked for nothing (dx, dtheta NULL): the kind itself
                            agrees with the other ranks on what to compute (a rank without samples cannot tell from its
                            NULL arrays) */
  PetscBool draws;       /* training mode draws random numbers indexed by the global sample (dropout's mask, attention
                            dropout) from a pass counter: its forward finds the rows' offset collectively (an MPI_Exscan)
                            unless its caller gives it, and backward replays the last forward's draw (a Net's pipeline
                            gives the place, holds the counter over a pass's micro-batches and runs the forward again
                            before another micro-batch's backward, netplace.c) */
  PetscBool discrete;    /* its input holds integer ids (embedding): nothing is differentiable with respect to it (its
                            cotangent is zero), and a derivative test must not perturb it (NetTestJacobian()) */
  PetscBool actonly;     /* the kernels read nothing of a forward pass but its input and output arrays (no masks,
                            statistics or buffers of the kind's own): NetSetForwardCache() may hand an earlier pass back */
  PetscBool isrelu;      /* the activation is max(x, 0), +0 for -0 and NaN (relu): a fused one may run as a oneDNN matmul's
                            or convolution's eltwise post-op, whose relu gives these bits (layergemmkernels.h, convonednn.c) */
  PetscInt   nbuffers;   /* non-trainable state saved with the model (e.g. batchnorm running statistics) */
  PetscInt64 maxnparams; /* -1, or the most parameters the layer may have (set by its Net while a model file is read);
                            a layer with an inner Net (ode) hands it on, so that the inner Net refuses before allocating */
  PetscScalar *buffers;  /* allocated and freed by the kind (setup / reset) */
  PetscBool    setupcalled;
  PetscBool    training; /* training mode (dropout active, batchnorm uses batch statistics); LayerSetTraining() */
  PetscBool    frozen;   /* derivative-test mode: repeat the last random draws and discretisation, update no running
                            statistics, so that finite differences see one fixed map; LayerSetFrozen() */
  PetscInt index;        /* its position in its owner's layer list (LayerSetIndex()): names it in messages and separates
                            the random streams of the layers of one network (dropout masks); -1 if none */
  PetscInt fielddim;     /* 0: a sample is the whole input shape. d > 0 (point form): a sample is one point of a d-dimensional
                            field and the layer's shapes are (channels): a windowed kind (getwindow, getscale below) sets
                            out = (output channels) and its parameter count, and describes its window over its spatial dims
                            (d of them where its settings leave the number open: one kernel value, one factor); it has no
                            kernels in this form (a copy of it in the other form runs on a box of the field). Pointwise
                            kinds ignore it. Set before LayerSetUp(). */
  PetscLogEvent event[LAYER_NUM_PHASES];
  PetscBool     bf16onednn; /* its bfloat16 kernels (forwardbf16...) are oneDNN's bfloat16 primitives: they run only where gemm is
                               PETNET_GEMM_ONEDNN_BF16 and the CPU has them (dense, conv2d, conv3d: PetNetOneDNNHasBF16()) */
  PetNetGemmBackend gemm;   /* who runs the float kernels' GEMMs (LayerGemmSingle()'s epilogue): native (sgemm) unless its
                               Net sets oneDNN (NetSetBackend() at single or bfloat16, include/petnet/private/onednnimpl.h) */

  void *data;
};

PETSC_EXTERN PetscErrorCode LayerGetTensors(Layer, PetscInt *, LayerTensorInfo[]);
PETSC_INTERN PetscErrorCode LayerTensorSet_Private(LayerTensorInfo *, const char[], PetscInt, LayerTensorLayout, PetscInt, const PetscInt[]);
PETSC_INTERN PetscErrorCode LayerRegisterEvents_Private(LayerType);
PETSC_INTERN PetscErrorCode LayerGetNodeDescription_Private(Layer, size_t, char[]);
PETSC_INTERN PetscErrorCode LayerCopyArgumentsWithoutBlanks_Private(Layer, const char[], size_t, char[], const char[]);
PETSC_INTERN PetscErrorCode LayerGetEvents_Private(LayerType, PetscLogEvent[]);
PETSC_INTERN PetscErrorCode LayerForwardAct(Layer, Layer, PetscDataType, PetscInt, const PetscScalar *, const void *, void *);
PETSC_INTERN PetscErrorCode LayerBackwardMask(Layer, Layer, PetscDataType, PetscInt, const PetscScalar *, const void *, const void *, const void *, void *, PetscScalar *);
/* the bfloat16 entries (layerbf16.c): whether the kind has them, and the three passes with the layer's log events */
static inline PetscBool LayerHasBF16(Layer layer)
{
  return (PetscBool)(layer->ops->forwardbf16 && layer->ops->backwardmaskbf16 && layer->ops->jvpbf16);
}
PETSC_INTERN PetscErrorCode LayerForwardBF16(Layer, Layer, PetscInt, const PetscScalar *, const uint16_t *, uint16_t *);
PETSC_INTERN PetscErrorCode LayerBackwardBF16(Layer, Layer, PetscInt, const PetscScalar *, const uint16_t *, const uint16_t *, const uint16_t *, uint16_t *, PetscScalar *);
PETSC_INTERN PetscErrorCode LayerJVPBF16(Layer, PetscInt, const PetscScalar *, const uint16_t *, const uint16_t *, const uint16_t *, const PetscScalar *, uint16_t *);

/* y[0..N) = f(y) in place with the activation act passed to forwardact (LayerMask: dx = f'(x) dx, with the one passed to
   backwardmask), or nothing when act is NULL; in the calling thread, for a block of the output the kernel has just written */
static inline PetscErrorCode LayerActivate(Layer act, PetscInt N, PetscScalar *y)
{
  return act ? act->ops->activate(act, N, y) : 0;
}
static inline PetscErrorCode LayerActivateSingle(Layer act, PetscInt N, float *y)
{
  return act ? act->ops->activatesingle(act, N, y) : 0;
}
static inline PetscErrorCode LayerMask(Layer act, PetscInt N, const PetscScalar *x, PetscScalar *dx)
{
  return act ? act->ops->activatemask(act, N, x, dx) : 0;
}
static inline PetscErrorCode LayerMaskSingle(Layer act, PetscInt N, const float *x, float *dx)
{
  return act ? act->ops->activatemasksingle(act, N, x, dx) : 0;
}
