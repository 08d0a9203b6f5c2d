/* Loss: lifecycle, registry, and the global mean over the batch. */
#include <petnet/private/lossimpl.h>

/*@C
  LossRegister - adds a loss; LossSetType(loss, name) then calls create(loss). Registers its log event "Loss:name".

  Not collective

  Input Parameters:
+ name   - the name of the loss (-loss_type name)
- create - the function that fills the ops table and the data of a Loss of this kind

  Level: advanced

.seealso: `LossRegisterAll()`, `LossSetType()`
@*/
PetscErrorCode LossRegister(const char name[], PetscErrorCode (*create)(Loss))
{
  char          ename[64];
  PetscLogEvent event;

  PetscFunctionBegin;
  PetscCall(LossInitializePackage());
  PetscCall(PetscFunctionListAdd(&LossList, name, create));
  PetscCall(PetscSNPrintf(ename, sizeof(ename), "Loss:%s", name));
  PetscCall(PetscLogEventRegister(ename, LOSS_CLASSID, &event));
  PetscFunctionReturn(0);
}

/*@
  LossCreate - creates a Loss, a scalar objective f(Y, T) of a network's output Y and a target T, averaged over the
  global batch; it has no type yet

  Collective

  Input Parameter:
. comm - the communicator (that of the Net whose output it scores: LossEvaluate() sums over it)

  Output Parameter:
. loss - the new Loss

  Notes:
  Choose the loss with LossSetType() or -loss_type (LossSetFromOptions()); LossSetUp(), and so the first
  LossEvaluate(), makes it `LOSSCROSSENTROPY` when no type was set. Initializes the Loss package
  (LossInitializePackage()) on first use.

  Level: beginner

.seealso: `LossSetType()`, `LossSetFromOptions()`, `LossEvaluate()`, `LossDestroy()`, `TrainerSetLoss()`
@*/
PetscErrorCode LossCreate(MPI_Comm comm, Loss *loss)
{
  Loss l;

  PetscFunctionBegin;
  PetscValidPointer(loss, 2);
  PetscCall(LossInitializePackage());
  PetscCall(PetscHeaderCreate(l, LOSS_CLASSID, "Loss", "Loss function", "Loss", comm, LossDestroy, LossView));
  *loss = l;
  PetscFunctionReturn(0);
}

/*@C
  LossSetType - sets the kind of loss

  Collective

  Input Parameters:
+ loss - the Loss
- type - `LOSSCROSSENTROPY` (softmax and negative log-likelihood of integer labels), `LOSSMSE` (squared error),
         `LOSSL1` (absolute error), or a name added with LossRegister()

  Notes:
  Setting the type the Loss already has does nothing. Otherwise the previous type's data are destroyed, the Loss is
  no longer set up, and its operations and log event ("Loss:type") are those of the new type. An unknown name is an
  error (PETSC_ERR_ARG_UNKNOWN_TYPE). The option -loss_type sets it from the command line (LossSetFromOptions()).

  Level: beginner

.seealso: `LossGetType()`, `LossRegister()`, `LossSetFromOptions()`, `LossCreate()`
@*/
PetscErrorCode LossSetType(Loss loss, LossType type)
{
  PetscErrorCode (*create)(Loss);
  PetscBool match;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscCall(PetscObjectTypeCompare((PetscObject)loss, type, &match));
  if (match) PetscFunctionReturn(0);
  PetscCall(PetscFunctionListFind(LossList, type, &create));
  PetscCheck(create, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_UNKNOWN_TYPE, "Unknown loss \"%s\": use -loss_type crossentropy, mse or l1, or register your own with LossRegister()", type);
  PetscTryTypeMethod(loss, destroy);
  PetscCall(PetscMemzero(loss->ops, sizeof(struct _LossOps)));
  loss->data        = NULL;
  loss->setupcalled = PETSC_FALSE;
  PetscCall(PetscObjectChangeTypeName((PetscObject)loss, type));
  {
    char name[64];

    PetscCall(PetscSNPrintf(name, sizeof(name), "Loss:%s", type)); /* registered by LossRegister() */
    PetscCall(PetscLogEventGetId(name, &loss->event));
  }
  PetscCall((*create)(loss));
  PetscFunctionReturn(0);
}

/*@C
  LossGetType - gets the kind of loss

  Not collective

  Input Parameter:
. loss - the Loss

  Output Parameter:
. type - the name of its type, e.g. `LOSSCROSSENTROPY`; NULL while none is set. Owned by the Loss: do not free it

  Level: intermediate

.seealso: `LossSetType()`, `LossSetFromOptions()`
@*/
PetscErrorCode LossGetType(Loss loss, LossType *type)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  *type = ((PetscObject)loss)->type_name;
  PetscFunctionReturn(0);
}

/*@C
  LossSetOptionsPrefix - sets the prefix of the Loss's options, e.g. "aux_" for -aux_loss_type.

  Logically collective

  Input Parameters:
+ loss   - the Loss
- prefix - the prefix (NULL or "" for none); it must not begin with a hyphen

  Level: intermediate

.seealso: `LossAppendOptionsPrefix()`, `LossGetOptionsPrefix()`, `LossSetFromOptions()`
@*/
PetscErrorCode LossSetOptionsPrefix(Loss loss, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)loss, prefix));
  PetscFunctionReturn(0);
}

/*@C
  LossAppendOptionsPrefix - appends to the prefix of the Loss's options.

  Logically collective

  Input Parameters:
+ loss   - the Loss
- prefix - the text to append

  Level: intermediate

.seealso: `LossSetOptionsPrefix()`, `LossGetOptionsPrefix()`
@*/
PetscErrorCode LossAppendOptionsPrefix(Loss loss, const char prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscCall(PetscObjectAppendOptionsPrefix((PetscObject)loss, prefix));
  PetscFunctionReturn(0);
}

/*@C
  LossGetOptionsPrefix - the prefix of the Loss's options.

  Not collective

  Input Parameter:
. loss - the Loss

  Output Parameter:
. prefix - the prefix (NULL when none was set); owned by the Loss

  Level: intermediate

.seealso: `LossSetOptionsPrefix()`, `LossAppendOptionsPrefix()`
@*/
PetscErrorCode LossGetOptionsPrefix(Loss loss, const char *prefix[])
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidPointer(prefix, 2);
  PetscCall(PetscObjectGetOptionsPrefix((PetscObject)loss, prefix));
  PetscFunctionReturn(0);
}

/*@
  LossSetFromOptions - sets the Loss's type from the options database, and then its type's own options

  Collective

  Input Parameter:
. loss - the Loss

  Options Database Key:
. -loss_type <crossentropy,mse,l1> - the loss (LossSetType()); read with the Loss's prefix (LossSetOptionsPrefix()),
                                     e.g. -aux_loss_type. Without the option the current type stays, and a Loss with
                                     no type becomes crossentropy

  Notes:
  Also runs the type's own options (crossentropy's -loss_ignore_index and -loss_label_smoothing,
  LossCrossEntropySetIgnoreIndex(), LossCrossEntropySetLabelSmoothing(); mse and l1 have none) and the handlers added with
  PetscObjectAddOptionsHandler(). A Trainer does not call it for the Loss it is given: call it yourself.

  Level: beginner

.seealso: `LossSetType()`, `LossSetOptionsPrefix()`, `LossCreate()`, `LossSetUp()`
@*/
PetscErrorCode LossSetFromOptions(Loss loss)
{
  char      type[256];
  PetscBool flg;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscObjectOptionsBegin((PetscObject)loss);
  PetscCall(PetscOptionsFList("-loss_type", "Loss function", "LossSetType", LossList, ((PetscObject)loss)->type_name ? ((PetscObject)loss)->type_name : LOSSCROSSENTROPY, type, sizeof(type), &flg));
  if (flg)
    PetscCall(LossSetType(loss, type));
  else if (!((PetscObject)loss)->type_name)
    PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscTryTypeMethod(loss, setfromoptions, PetscOptionsObject);
  PetscCall(PetscObjectProcessOptionsHandlers((PetscObject)loss, PetscOptionsObject));
  PetscOptionsEnd();
  PetscFunctionReturn(0);
}

/*@
  LossSetUp - prepares the Loss for LossEvaluate(): gives it the type `LOSSCROSSENTROPY` when none was set. Idempotent.

  Collective

  Input Parameter:
. loss - the Loss

  Notes:
  LossEvaluate() and TrainerSetUp() call it, so calling it yourself is optional. LossSetType() with a new type
  undoes it.

  Level: intermediate

.seealso: `LossCreate()`, `LossSetType()`, `LossSetFromOptions()`, `LossEvaluate()`
@*/
PetscErrorCode LossSetUp(Loss loss)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  if (loss->setupcalled) PetscFunctionReturn(0);
  if (!((PetscObject)loss)->type_name) PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  loss->setupcalled = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@
  LossView - prints the Loss: its class, options prefix and type, then what its type adds (the built-in losses add
  nothing)

  Collective

  Input Parameters:
+ loss   - the Loss
- viewer - an ASCII viewer, or NULL for standard output on the Loss's communicator

  Notes:
  TrainerView() views the Trainer's Loss with it.

  Level: intermediate

.seealso: `LossCreate()`, `LossSetType()`, `TrainerView()`
@*/
PetscErrorCode LossView(Loss loss, PetscViewer viewer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)loss), &viewer));
  PetscCall(PetscObjectPrintClassNamePrefixType((PetscObject)loss, viewer));
  PetscTryTypeMethod(loss, view, viewer);
  PetscFunctionReturn(0);
}

/*@
  LossDestroy - drops a reference to a Loss; with the last one, frees it, its type's data and its references to the
  output and target of the last LossEvaluate()

  Collective

  Input Parameter:
. loss - the Loss (NULL is allowed); set to NULL

  Level: beginner

.seealso: `LossCreate()`, `LossEvaluate()`
@*/
PetscErrorCode LossDestroy(Loss *loss)
{
  PetscFunctionBegin;
  if (!*loss) PetscFunctionReturn(0);
  PetscValidHeaderSpecific(*loss, LOSS_CLASSID, 1);
  if (--((PetscObject)(*loss))->refct > 0) {
    *loss = NULL;
    PetscFunctionReturn(0);
  }
  PetscCall(VecDestroy(&(*loss)->Y));
  PetscCall(VecDestroy(&(*loss)->T));
  PetscTryTypeMethod(*loss, destroy);
  PetscCall(PetscHeaderDestroy(loss));
  PetscFunctionReturn(0);
}

/* Y and T must be split over the ranks alike: each rank holds whole samples of both, in the same proportion
   ny/nt = Ny/Nt (1 for mse and l1, the number of classes for crossentropy). Collective, so every rank stops. */
static PetscErrorCode LossCheckLayout_Private(Loss loss, Vec Y, Vec T)
{
  PetscInt ny, nt, Ny, Nt;
  PetscInt bad[2], gbad[2];

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(Y, &ny));
  PetscCall(VecGetLocalSize(T, &nt));
  PetscCall(VecGetSize(Y, &Ny));
  PetscCall(VecGetSize(T, &Nt));
  bad[0] = ((PetscInt64)ny * Nt != (PetscInt64)nt * Ny) ? 1 : 0;
  bad[1] = bad[0] ? ny : -1;
  PetscCall(MPIU_Allreduce(bad, gbad, 2, MPIU_INT, MPI_MAX, PetscObjectComm((PetscObject)loss)));
  PetscCheck(!gbad[0], PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_SIZ,
             "%s loss: the output (%" PetscInt_FMT " entries) and the target (%" PetscInt_FMT " entries) are not split over the ranks alike (a rank holds %" PetscInt_FMT
             " output entries): give every rank the targets of its own samples, e.g. create the target Vec with the same local number of samples as the Net's batch",
             ((PetscObject)loss)->type_name, Ny, Nt, gbad[1]);
  PetscFunctionReturn(0);
}

/* V must have the layout of the reference Vec Y (output, gradient or direction). */
static PetscErrorCode LossCheckLike_Private(Loss loss, Vec Y, Vec V, const char name[])
{
  PetscInt n, m, N, M;

  PetscFunctionBegin;
  PetscCall(VecGetLocalSize(Y, &n));
  PetscCall(VecGetLocalSize(V, &m));
  PetscCall(VecGetSize(Y, &N));
  PetscCall(VecGetSize(V, &M));
  PetscCheck(N == M, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_SIZ, "%s loss: the %s has %" PetscInt_FMT " entries but the output has %" PetscInt_FMT ": create it with VecDuplicate() of the output", ((PetscObject)loss)->type_name, name, M,
             N);
  PetscCheck(n == m, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "%s loss: the %s has %" PetscInt_FMT " local entries but the output has %" PetscInt_FMT " on this rank: create it with VecDuplicate() of the output", ((PetscObject)loss)->type_name, name, m,
             n);
  PetscFunctionReturn(0);
}

/* A loss's point (Y, T): the Loss set up, the local sizes, the global count N the mean divides by (before an ignore
   index), and the layouts checked */
static PetscErrorCode LossPointBegin_Private(Loss loss, Vec Y, Vec T, PetscInt *ny, PetscInt *nt, PetscInt *N)
{
  PetscInt Ny, Nt;

  PetscFunctionBegin;
  PetscCall(LossSetUp(loss));
  PetscCall(VecGetLocalSize(Y, ny));
  PetscCall(VecGetLocalSize(T, nt));
  PetscCall(VecGetSize(Y, &Ny));
  PetscCall(VecGetSize(T, &Nt));
  PetscUseTypeMethod(loss, count, Ny, Nt, N);
  PetscCall(LossCheckLayout_Private(loss, Y, T));
  PetscFunctionReturn(0);
}

/* the point of the last evaluation kept (referenced) for LossHessianMult(), with its count */
static PetscErrorCode LossKeepPoint_Private(Loss loss, Vec Y, Vec T, PetscInt N)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectReference((PetscObject)Y));
  PetscCall(PetscObjectReference((PetscObject)T));
  PetscCall(VecDestroy(&loss->Y));
  PetscCall(VecDestroy(&loss->T));
  loss->Y = Y;
  loss->T = T;
  loss->N = N;
  PetscFunctionReturn(0);
}

/*@
  LossEvaluate - f = (1/N) sum of the per-sample (or per-entry) losses over the global batch, and dY = df/dY.

  Collective

  Input Parameters:
+ loss - the Loss (set up here with LossSetUp() if it is not yet: crossentropy when no type was set)
. Y    - the network's output, sample-major: for crossentropy [samples][classes] logits, for mse and l1 any layout
         that T shares
- T    - the target: for crossentropy one integer class label in [0, classes) per sample; for mse and l1 a Vec of
         Y's shape

  Output Parameters:
+ f  - the mean loss, the same on every rank (0 for an empty batch)
- dY - NULL, or a Vec laid out like Y (VecDuplicate() of it) that receives the gradient df/dY, scaled by 1/N like f

  Notes:
  The sum runs over every rank and is divided by the global count N: the number of labels (the size of T) for
  crossentropy, the number of entries (the size of Y) for mse and l1, as PyTorch's reduction="mean". Per label s,
  crossentropy is logsumexp(y_s) - y_s[t_s], with dy_s = (softmax(y_s) - onehot(t_s))/N (the log-sum-exp is shifted
  by the largest logit, so it never overflows); per entry, mse is (y - t)^2 with dy = 2 (y - t)/N, and l1 is |y - t|
  with dy = sign(y - t)/N (0 where y = t). A crossentropy output of shape (T, V) per sample takes T labels per sample.
  With an ignore index (LossCrossEntropySetIgnoreIndex(), -loss_ignore_index, default -100) a label equal to it counts
  neither in the sum nor in N (the number of the other labels over all ranks), and its rows of dY are zero; a batch
  whose labels are all ignored gives f = 0 and dY = 0. With label smoothing s (LossCrossEntropySetLabelSmoothing())
  the target is (1 - s) onehot(t_s) + s/V: the loss logsumexp(y_s) - (1 - s) y_s[t_s] - (s/V) sum_k y_s[k], and dy_s =
  (softmax(y_s) - (1 - s) onehot(t_s) - s/V)/N, as torch.nn.functional.cross_entropy(ignore_index=, label_smoothing=).

  Y and T must be split over the ranks alike, each rank holding whole samples of both; dY must have Y's global and
  local sizes. A mismatch, or a crossentropy label that is not an integer in range, is an error naming the sizes or
  the sample. The work is logged under the type's event "Loss:type".

  The Loss keeps references to Y and T as the point of LossHessianMult(), which reads the values they hold when it
  is called.

  Level: beginner

.seealso: `LossHessianMult()`, `LossCountCorrect()`, `LossSetType()`, `LossSetUp()`, `NetForward()`, `NetBackward()`
@*/
PetscErrorCode LossEvaluate(Loss loss, Vec Y, Vec T, PetscReal *f, Vec dY)
{
  PetscInt           ny, nt, N;
  const PetscScalar *y, *t;
  PetscScalar       *dy = NULL;
  PetscReal          sum;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidHeaderSpecific(Y, VEC_CLASSID, 2);
  PetscValidHeaderSpecific(T, VEC_CLASSID, 3);
  PetscCall(LossPointBegin_Private(loss, Y, T, &ny, &nt, &N));
  if (dY) PetscCall(LossCheckLike_Private(loss, Y, dY, "gradient dY"));
  PetscCheck(Y != dY, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_IDN, "LossEvaluate() needs two different Vecs for Y and dY: the kernels read Y while they write dY");
  PetscCall(PetscLogEventBegin(loss->event, loss, 0, 0, 0));
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(T, &t));
  if (dY) PetscCall(VecGetArrayWrite(dY, &dy));
  PetscUseTypeMethod(loss, evaluate, ny, y, nt, t, &sum, dy);
  if (loss->ops->counted) { /* only some targets count (an ignore index): the mean divides by their global number,
                              summed with the loss in one reduction (a count below 2^53 is exact in a PetscReal) */
    PetscInt  n;
    PetscReal sn[2];

    PetscUseTypeMethod(loss, counted, nt, t, &n);
    sn[0] = sum;
    sn[1] = (PetscReal)n;
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sn, 2, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)loss)));
    sum = sn[0];
    N   = (PetscInt)sn[1]; /* at most the size of T */
  } else
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &sum, 1, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)loss)));
  if (dY) PetscCall(VecRestoreArrayWrite(dY, &dy));
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(PetscLogEventEnd(loss->event, loss, 0, 0, 0));
  *f = N ? sum / N : 0.0;
  if (dY && N) PetscCall(VecScale(dY, 1.0 / N));
  PetscCall(LossKeepPoint_Private(loss, Y, T, N));
  PetscFunctionReturn(0);
}

typedef struct {
  Loss               loss;
  const PetscScalar *t;          /* this rank's targets */
  PetscInt           nout, tper; /* output entries and target entries of a sample */
  PetscReal          sum, scale; /* this rank's sum of the losses so far; 1 / the global count */
} LossNetFB;

/* NetForwardBackward()'s output cotangent: the rows r0 .. r0 + n - 1 (a micro-batch's, or all): their losses summed,
   dy = d(sum)/dy / N (local: the count N was taken before) */
static PetscErrorCode LossNetFBCotangent(Net net, PetscInt r0, PetscInt n, const PetscScalar y[], PetscScalar dy[], void *ctx)
{
  LossNetFB *c = (LossNetFB *)ctx;
  PetscReal  sum;

  PetscFunctionBegin;
  if (!n) PetscFunctionReturn(0);
  PetscUseTypeMethod(c->loss, evaluate, n * c->nout, y, n * c->tper, c->t + (size_t)r0 * c->tper, &sum, dy);
  c->sum += sum;
  for (PetscInt i = 0; i < n * c->nout; i++) dy[i] *= c->scale;
  PetscFunctionReturn(0);
}

/*@
  LossNetForwardBackward - the Net's output Y at X, the loss f = L(Y, T) and its gradient: dX = J_x^T dL/dY and
  G += J_theta^T dL/dY, in one call (NetForwardBackward())

  Collective

  Input Parameters:
+ loss - the Loss
. net  - the Net
. X    - the input batch
- T    - the targets, split over the ranks like the samples of X

  Output Parameters:
+ Y  - the output (laid out like the Net's output, NetCreateVecs())
. f  - the loss, the same mean as LossEvaluate()'s
. dX - the input cotangent (overwritten), or NULL
- G  - the gradient, accumulated into (zero it first), or NULL

  Notes:
  The same numbers as NetForward(), LossEvaluate() and NetBackward() up to round-off; with -net_pipeline_schedule 1f1b
  the loss of each micro-batch is taken as soon as its output exists, so that each pipeline stage keeps only a few
  micro-batches' values (NetForwardBackward()). Afterwards the Loss holds Y and T, as after LossEvaluate(), for
  LossHessianMult().

  Level: intermediate

.seealso: `LossEvaluate()`, `NetForwardBackward()`, `NetSetPipelineSchedule()`
@*/
PetscErrorCode LossNetForwardBackward(Loss loss, Net net, Vec X, Vec T, Vec Y, PetscReal *f, Vec dX, Vec G)
{
  LossNetFB   c;
  PetscInt    ny, nt, N, nout;
  PetNetShape out;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidHeaderSpecific(net, NET_CLASSID, 2);
  PetscValidHeaderSpecific(T, VEC_CLASSID, 4);
  PetscValidHeaderSpecific(Y, VEC_CLASSID, 5);
  PetscCall(LossPointBegin_Private(loss, Y, T, &ny, &nt, &N));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &nout));
  c.loss = loss;
  c.nout = nout;
  c.tper = ny ? (PetscInt)(((PetscInt64)nt * nout) / ny) : 0; /* nt / (ny / nout) */
  c.sum  = 0;
  PetscCall(VecGetArrayRead(T, &c.t));
  if (loss->ops->counted) { /* the targets that count, over every rank, before any micro-batch is scaled */
    PetscInt n;

    PetscUseTypeMethod(loss, counted, nt, c.t, &n);
    PetscCall(MPIU_Allreduce(&n, &N, 1, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)loss)));
  }
  c.scale = N ? 1.0 / N : 0.0;
  PetscCall(PetscLogEventBegin(loss->event, loss, 0, 0, 0));
  PetscCall(NetForwardBackward(net, X, LossNetFBCotangent, &c, Y, dX, G));
  PetscCall(PetscLogEventEnd(loss->event, loss, 0, 0, 0));
  PetscCall(VecRestoreArrayRead(T, &c.t));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &c.sum, 1, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)loss)));
  *f = N ? c.sum / N : 0.0;
  PetscCall(LossKeepPoint_Private(loss, Y, T, N));
  PetscFunctionReturn(0);
}

/*@
  LossHessianMult - HV = (d^2 f/dY^2) V at the last LossEvaluate point.

  Logically collective

  Input Parameters:
+ loss - the Loss, after a LossEvaluate()
- V    - the direction, laid out like the output Y of the last LossEvaluate()

  Output Parameter:
. HV - the product, laid out like Y; a different Vec from V

  Notes:
  The Hessian is that of the mean f, so it carries the same 1/N as LossEvaluate(): for crossentropy, per label,
  H_s v = (p .* v - p (p . v))/N with p = softmax(y_s) (with or without label smoothing, which is linear in y; zero for
  an ignored label, N the count of the last LossEvaluate()); for mse 2 V/N; for l1 0 (the loss is piecewise linear).
  It is positive semi-definite for all three, as a Gauss-Newton product J^T H J needs.

  Each rank multiplies its own samples: there is no communication. The point is the Y and T of the last
  LossEvaluate(), with the values they hold now; calling it before any LossEvaluate() is an error (PETSC_ERR_ORDER),
  and so are V or HV not laid out like Y.

  Level: advanced

.seealso: `LossEvaluate()`, `NetJVP()`, `NetBackward()`
@*/
PetscErrorCode LossHessianMult(Loss loss, Vec V, Vec HV)
{
  PetscInt           ny, nt, Ny, Nt, N;
  const PetscScalar *y, *t, *v;
  PetscScalar       *hv;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidHeaderSpecific(V, VEC_CLASSID, 2);
  PetscValidHeaderSpecific(HV, VEC_CLASSID, 3);
  PetscCheck(loss->Y, PetscObjectComm((PetscObject)loss), PETSC_ERR_ORDER, "LossHessianMult() needs the point of a LossEvaluate(): call LossEvaluate() first");
  PetscCheck(V != HV, PetscObjectComm((PetscObject)loss), PETSC_ERR_ARG_IDN, "LossHessianMult() needs two different Vecs for V and HV: the kernels read V while they write HV");
  PetscCall(LossCheckLike_Private(loss, loss->Y, V, "direction V"));
  PetscCall(LossCheckLike_Private(loss, loss->Y, HV, "product HV"));
  PetscCall(VecGetLocalSize(loss->Y, &ny));
  PetscCall(VecGetLocalSize(loss->T, &nt));
  PetscCall(VecGetSize(loss->Y, &Ny));
  PetscCall(VecGetSize(loss->T, &Nt));
  PetscUseTypeMethod(loss, count, Ny, Nt, &N);
  if (loss->ops->counted) N = loss->N; /* the targets that count, as the last LossEvaluate() found them */
  PetscCall(VecGetArrayRead(loss->Y, &y));
  PetscCall(VecGetArrayRead(loss->T, &t));
  PetscCall(VecGetArrayRead(V, &v));
  PetscCall(VecGetArrayWrite(HV, &hv));
  PetscUseTypeMethod(loss, hessmult, ny, y, nt, t, v, hv);
  PetscCall(VecRestoreArrayWrite(HV, &hv));
  PetscCall(VecRestoreArrayRead(V, &v));
  PetscCall(VecRestoreArrayRead(loss->T, &t));
  PetscCall(VecRestoreArrayRead(loss->Y, &y));
  if (N) PetscCall(VecScale(HV, 1.0 / N));
  PetscFunctionReturn(0);
}

/*@
  LossCountCorrect - how many samples of the global batch have arg-max output equal to their integer label.

  Collective

  Input Parameters:
+ loss - the Loss; only its communicator is used, so it works whatever the Loss's type
. Y    - the outputs (scores or logits), sample-major: [samples][classes]
- T    - the targets: one integer label per sample

  Output Parameter:
. correct - the number of correctly classified samples over every rank, the same on every rank

  Notes:
  Y and T must be split over the ranks alike, each rank holding whole samples of both; the local size of Y must be a
  whole number of classes per label. Ties go to the first largest class. Labels are not checked: a label outside
  [0, classes) is never counted as correct, and a fractional one is truncated. The accuracy is correct divided by the
  global size of T. A crossentropy Loss's ignored label (LossCrossEntropySetIgnoreIndex()) is never counted as correct
  either (it names no class).

  Level: intermediate

.seealso: `LossEvaluate()`, `TrainerEvaluate()`, `TrainerGetResults()`
@*/
PetscErrorCode LossCountCorrect(Loss loss, Vec Y, Vec T, PetscInt *correct)
{
  PetscInt           ny, nt, c, count = 0, ignore = 0;
  PetscBool          hasignore;
  const PetscScalar *y, *t;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidHeaderSpecific(Y, VEC_CLASSID, 2);
  PetscValidHeaderSpecific(T, VEC_CLASSID, 3);
  PetscCall(LossCheckLayout_Private(loss, Y, T));
  PetscCall(LossCrossEntropyGetIgnoreIndex(loss, &hasignore, &ignore));
  PetscCall(VecGetLocalSize(Y, &ny));
  PetscCall(VecGetLocalSize(T, &nt));
  PetscCheck(nt > 0 ? ny % nt == 0 : ny == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "LossCountCorrect: the outputs (%" PetscInt_FMT " local entries) are not a whole number of classes for %" PetscInt_FMT " labels: the target must hold one integer label per sample", ny, nt);
  c = nt ? ny / nt : 0;
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(T, &t));
  for (PetscInt s = 0; s < nt; s++) {
    PetscInt best = 0;

    if (hasignore && PetscRealPart(t[s]) == (PetscReal)ignore) continue;
    for (PetscInt k = 1; k < c; k++)
      if (PetscRealPart(y[s * c + k]) > PetscRealPart(y[s * c + best])) best = k;
    if (best == (PetscInt)PetscRealPart(t[s])) count++;
  }
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(MPIU_Allreduce(&count, correct, 1, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)loss)));
  PetscFunctionReturn(0);
}
