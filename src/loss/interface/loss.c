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

PetscErrorCode LossSetUp(Loss loss)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  if (loss->setupcalled) PetscFunctionReturn(0);
  if (!((PetscObject)loss)->type_name) PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  loss->setupcalled = PETSC_TRUE;
  PetscFunctionReturn(0);
}

PetscErrorCode LossView(Loss loss, PetscViewer viewer)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PetscObjectComm((PetscObject)loss), &viewer));
  PetscCall(PetscObjectPrintClassNamePrefixType((PetscObject)loss, viewer));
  PetscTryTypeMethod(loss, view, viewer);
  PetscFunctionReturn(0);
}

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

/*@
  LossEvaluate - f = (1/N) sum of the per-sample (or per-entry) losses over the global batch, and dY = df/dY.
@*/
PetscErrorCode LossEvaluate(Loss loss, Vec Y, Vec T, PetscReal *f, Vec dY)
{
  PetscInt           ny, nt, Ny, Nt, N;
  const PetscScalar *y, *t;
  PetscScalar       *dy = NULL;
  PetscReal          sum;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidHeaderSpecific(Y, VEC_CLASSID, 2);
  PetscValidHeaderSpecific(T, VEC_CLASSID, 3);
  PetscCall(LossSetUp(loss));
  PetscCall(VecGetLocalSize(Y, &ny));
  PetscCall(VecGetLocalSize(T, &nt));
  PetscCall(VecGetSize(Y, &Ny));
  PetscCall(VecGetSize(T, &Nt));
  PetscUseTypeMethod(loss, count, Ny, Nt, &N);
  PetscCall(LossCheckLayout_Private(loss, Y, T));
  if (dY) PetscCall(LossCheckLike_Private(loss, Y, dY, "gradient dY"));
  PetscCall(PetscLogEventBegin(loss->event, loss, 0, 0, 0));
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(T, &t));
  if (dY) PetscCall(VecGetArrayWrite(dY, &dy));
  PetscUseTypeMethod(loss, evaluate, ny, y, nt, t, &sum, dy);
  if (dY) PetscCall(VecRestoreArrayWrite(dY, &dy));
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(PetscLogEventEnd(loss->event, loss, 0, 0, 0));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &sum, 1, MPIU_REAL, MPIU_SUM, PetscObjectComm((PetscObject)loss)));
  *f = N ? sum / N : 0.0;
  if (dY && N) PetscCall(VecScale(dY, 1.0 / N));
  PetscCall(PetscObjectReference((PetscObject)Y));
  PetscCall(PetscObjectReference((PetscObject)T));
  PetscCall(VecDestroy(&loss->Y));
  PetscCall(VecDestroy(&loss->T));
  loss->Y = Y;
  loss->T = T;
  PetscFunctionReturn(0);
}

/*@
  LossHessianMult - HV = (d^2 f/dY^2) V at the last LossEvaluate point.
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
  PetscCall(LossCheckLike_Private(loss, loss->Y, V, "direction V"));
  PetscCall(LossCheckLike_Private(loss, loss->Y, HV, "product HV"));
  PetscCall(VecGetLocalSize(loss->Y, &ny));
  PetscCall(VecGetLocalSize(loss->T, &nt));
  PetscCall(VecGetSize(loss->Y, &Ny));
  PetscCall(VecGetSize(loss->T, &Nt));
  PetscUseTypeMethod(loss, count, Ny, Nt, &N);
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
  Y: [n][classes], T: [n] labels.
@*/
PetscErrorCode LossCountCorrect(Loss loss, Vec Y, Vec T, PetscInt *correct)
{
  PetscInt           ny, nt, c, count = 0;
  const PetscScalar *y, *t;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(loss, LOSS_CLASSID, 1);
  PetscValidHeaderSpecific(Y, VEC_CLASSID, 2);
  PetscValidHeaderSpecific(T, VEC_CLASSID, 3);
  PetscCall(LossCheckLayout_Private(loss, Y, T));
  PetscCall(VecGetLocalSize(Y, &ny));
  PetscCall(VecGetLocalSize(T, &nt));
  PetscCheck(nt > 0 ? ny % nt == 0 : ny == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ,
             "LossCountCorrect: the outputs (%" PetscInt_FMT " local entries) are not a whole number of classes for %" PetscInt_FMT " labels: the target must hold one integer label per sample", ny, nt);
  c = nt ? ny / nt : 0;
  PetscCall(VecGetArrayRead(Y, &y));
  PetscCall(VecGetArrayRead(T, &t));
  for (PetscInt s = 0; s < nt; s++) {
    PetscInt best = 0;

    for (PetscInt k = 1; k < c; k++)
      if (PetscRealPart(y[s * c + k]) > PetscRealPart(y[s * c + best])) best = k;
    if (best == (PetscInt)PetscRealPart(t[s])) count++;
  }
  PetscCall(VecRestoreArrayRead(T, &t));
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(MPIU_Allreduce(&count, correct, 1, MPIU_INT, MPI_SUM, PetscObjectComm((PetscObject)loss)));
  PetscFunctionReturn(0);
}
