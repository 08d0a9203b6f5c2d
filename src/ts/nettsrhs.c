/*
  A Net as (part of) the right-hand side of a TS:  du/dt = N(u; theta) + g(t, u).

  u is a batch Vec: its local part is n samples of the Net's input shape (sample-major, channels-last), so a DMDA
  global Vec with dof = c is a batch of the local grid points. N must map its input shape to itself.

    explicit types  RHS form     G(t,u)       = N(u) + g(t,u)
                                 dG/du        = J_N + J_g          shell J  (MatMult = JVP, MatMultTranspose = VJP)
                                 dG/dtheta    = dN/dtheta          shell JP
    implicit types  implicit     F(t,u,udot)  = udot - N(u) - g(t,u)
                                 dF/du + shift dF/dudot = shift I - J_N - J_g      shell J
                                 dF/dtheta    = -dN/dtheta         shell JP
                                 preconditioner: shift I - J_g when the user's J_g is an assembled matrix, else J (PCNONE)

  Linearization point. TS asks for the Jacobian at a state u and applies it later, possibly after evaluating the
  function elsewhere (every function evaluation runs a NetForward that moves the Net's linearization). The context keeps
  a copy ulin of the last state the Jacobian was requested at and, before every product, checks that the Net's last
  forward pass is still at ulin with the same parameters (object ids and states of the Net's input workspace and of
  theta); if not, it runs NetForward(ulin) again. The products are therefore always taken at the requested state.

  The context lives on the TS (a composed PetscContainer) and holds a reference to the Net.
*/
#include "nettsimpl.h"

typedef struct {
  Net       net;
  PetscBool implicit;

  /* the linearization point: a copy of the state of the last Jacobian request (srcid, srcstate identify that state) */
  Vec              ulin;
  PetscBool        haslin;
  PetscObjectId    srcid;
  PetscObjectState srcstate;
  NetTSPoint       lin; /* the Net's forward pass at ulin */
  PetscReal        shift;

  Mat J, JP; /* shells handed to TS */
  Vec fwork; /* N(u) when a user part is added */

  /* the user's part g(t, u) */
  PetscErrorCode (*userrhs)(TS, PetscReal, Vec, Vec, void *);
  PetscErrorCode (*userjac)(TS, PetscReal, Vec, Mat, void *);
  void *userctx;
  Mat   Juser, P;
} NetTS;

static const char NetTSKey[] = "PetNetTSRHS";

PetscErrorCode NetTSIsExplicitType_Private(TS ts, PetscBool *flg)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)ts, flg, TSEULER, TSRK, TSSSP, TSMPRK, TSGLEE, ""));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetTSGetContext_Private(TS ts, NetTS **ctx)
{
  PetscContainer container;

  PetscFunctionBegin;
  PetscCall(PetscObjectQuery((PetscObject)ts, NetTSKey, (PetscObject *)&container));
  PetscCheck(container, PetscObjectComm((PetscObject)ts), PETSC_ERR_ORDER, "This TS has no Net: call NetTSSetRHS() first");
  PetscCall(PetscContainerGetPointer(container, (void **)ctx));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetTSDestroyContext_Private(void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(VecDestroy(&ctx->ulin));
  PetscCall(VecDestroy(&ctx->fwork));
  PetscCall(MatDestroy(&ctx->J));
  PetscCall(MatDestroy(&ctx->JP));
  PetscCall(MatDestroy(&ctx->Juser));
  PetscCall(MatDestroy(&ctx->P));
  PetscCall(NetDestroy(&ctx->net));
  PetscCall(PetscFree(ctx));
  PetscFunctionReturn(0);
}

/* The TS type must still belong to the family the callbacks were installed for. */
static PetscErrorCode NetTSCheckForm_Private(TS ts, NetTS *ctx)
{
  PetscBool explicit;
  const char *prefix;
  TSType      type;

  PetscFunctionBegin;
  PetscCall(NetTSIsExplicitType_Private(ts, &explicit));
  if (explicit != ctx->implicit) PetscFunctionReturn(0);
  PetscCall(TSGetOptionsPrefix(ts, &prefix));
  PetscCall(TSGetType(ts, &type));
  SETERRQ(PetscObjectComm((PetscObject)ts), PETSC_ERR_ORDER,
          "NetTSSetRHS() installed the %s form for the TS type of that time, but the TS is now of type %s (-%sts_type %s), which needs the %s form: call NetTSSetRHS() after TSSetType()/TSSetFromOptions()",
          ctx->implicit ? "implicit" : "explicit (RHS)", type, prefix ? prefix : "", type, ctx->implicit ? "explicit (RHS)" : "implicit");
}

/* Make the Net's last forward pass be at u with the current parameters, unless pt proves it is (nettsimpl.h) */
PetscErrorCode NetTSForwardAt_Private(Net net, Vec u, NetTSPoint *pt)
{
  PetscObjectState s0 = 0, st;

  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &st));
  if (net->forwarded && net->act && net->act[0] == pt->act0) PetscCall(PetscObjectStateGet((PetscObject)pt->act0, &s0));
  if (net->forwarded && net->act && net->act[0] == pt->act0 && s0 == pt->act0state && st == pt->thetastate) PetscFunctionReturn(0);
  PetscCall(NetForward(net, u, NULL));
  pt->act0 = net->act[0];
  PetscCall(PetscObjectStateGet((PetscObject)pt->act0, &pt->act0state));
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &pt->thetastate));
  PetscFunctionReturn(0);
}

/* Make the Net's last forward pass be at ulin (with the current parameters). */
static PetscErrorCode NetTSEnsureLinearized_Private(NetTS *ctx)
{
  PetscFunctionBegin;
  PetscCheck(ctx->haslin, PetscObjectComm((PetscObject)ctx->net), PETSC_ERR_ORDER, "The Jacobian of the Net right-hand side is applied before TS computed it");
  PetscCall(NetTSForwardAt_Private(ctx->net, ctx->ulin, &ctx->lin));
  PetscFunctionReturn(0);
}

/*
  Record u as the linearization point (a copy, unless u is the state we already hold) and linearize there. A new point
  also voids TS's record of the state its RHS Jacobian was computed at: TSComputeRHSJacobian() skips the callback when
  asked again at that state, and the shell must not be applied at a point a JacobianP request moved it to meanwhile.
*/
static PetscErrorCode NetTSLinearize_Private(TS ts, NetTS *ctx, Vec u)
{
  PetscObjectId    id;
  PetscObjectState state;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetId((PetscObject)u, &id));
  PetscCall(PetscObjectStateGet((PetscObject)u, &state));
  if (!ctx->haslin || id != ctx->srcid || state != ctx->srcstate) {
    PetscCall(VecCopy(u, ctx->ulin));
    ctx->srcid           = id;
    ctx->srcstate        = state;
    ctx->haslin          = PETSC_TRUE;
    ctx->lin.act0        = NULL; /* forces a forward pass at the new point */
    ts->rhsjacobian.time = PETSC_MIN_REAL;
  }
  PetscCall(NetTSEnsureLinearized_Private(ctx));
  PetscFunctionReturn(0);
}

/* F = N(u) + g(t, u) */
static PetscErrorCode NetTSEvaluate_Private(TS ts, NetTS *ctx, PetscReal t, Vec u, Vec F)
{
  PetscFunctionBegin;
  if (ctx->userrhs) {
    PetscCall((*ctx->userrhs)(ts, t, u, F, ctx->userctx));
    PetscCall(NetForward(ctx->net, u, ctx->fwork));
    PetscCall(VecAXPY(F, 1.0, ctx->fwork));
  } else
    PetscCall(NetForward(ctx->net, u, F));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetTSRHSFunction_Private(TS ts, PetscReal t, Vec u, Vec F, void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(NetTSCheckForm_Private(ts, ctx));
  PetscCall(NetTSEvaluate_Private(ts, ctx, t, u, F));
  PetscFunctionReturn(0);
}

/* Implicit form: the whole right-hand side is in the IFunction. This RHS function only catches an explicit type. */
static PetscErrorCode NetTSRHSFunctionGuard_Private(TS ts, PetscReal t, Vec u, Vec F, void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(NetTSCheckForm_Private(ts, ctx));
  PetscCall(VecZeroEntries(F));
  PetscFunctionReturn(0);
}

/* F = udot - N(u) - g(t, u) */
static PetscErrorCode NetTSIFunction_Private(TS ts, PetscReal t, Vec u, Vec udot, Vec F, void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(NetTSCheckForm_Private(ts, ctx));
  PetscCall(NetTSEvaluate_Private(ts, ctx, t, u, F));
  PetscCall(VecAYPX(F, -1.0, udot));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetTSRHSJacobian_Private(TS ts, PetscReal t, Vec u, Mat A, Mat B, void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(NetTSCheckForm_Private(ts, ctx));
  if (ctx->userjac) PetscCall((*ctx->userjac)(ts, t, u, ctx->Juser, ctx->userctx));
  PetscCall(NetTSLinearize_Private(ts, ctx, u));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetTSIJacobian_Private(TS ts, PetscReal t, Vec u, Vec udot, PetscReal shift, Mat A, Mat B, void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(NetTSCheckForm_Private(ts, ctx));
  if (ctx->userjac) PetscCall((*ctx->userjac)(ts, t, u, ctx->Juser, ctx->userctx));
  PetscCall(NetTSLinearize_Private(ts, ctx, u));
  ctx->shift = shift;
  if (!ctx->P) { /* the preconditioner matrix is the shell: PETSc's defaults (ILU, block Jacobi) need entries */
    SNES      snes;
    KSP       ksp;
    PC        pc;
    PetscBool needsentries;

    PetscCall(TSGetSNES(ts, &snes));
    PetscCall(SNESGetKSP(snes, &ksp));
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PetscObjectTypeCompareAny((PetscObject)pc, &needsentries, PCILU, PCBJACOBI, PCICC, PCJACOBI, PCSOR, PCASM, ""));
    if (needsentries || !((PetscObject)pc)->type_name) {
      PetscCall(PetscInfo(ts, "The Jacobian of the Net right-hand side is a shell: preconditioner none\n"));
      PetscCall(PCSetType(pc, PCNONE));
    }
  }
  if (ctx->P) { /* P = shift I - J_g */
    PetscCall(MatCopy(ctx->Juser, ctx->P, SAME_NONZERO_PATTERN));
    PetscCall(MatScale(ctx->P, -1.0));
    PetscCall(MatShift(ctx->P, shift));
  }
  PetscFunctionReturn(0);
}

/* Jacobians with respect to the parameters: called only by sensitivity analysis, so the integrator is checked here. */
static PetscErrorCode NetTSRHSJacobianP_Private(TS ts, PetscReal t, Vec u, Mat A, void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(NetTSCheckAdjoint(ts));
  PetscCall(NetTSLinearize_Private(ts, ctx, u));
  PetscFunctionReturn(0);
}

static PetscErrorCode NetTSIJacobianP_Private(TS ts, PetscReal t, Vec u, Vec udot, PetscReal shift, Mat A, void *vctx)
{
  NetTS *ctx = (NetTS *)vctx;

  PetscFunctionBegin;
  PetscCall(NetTSCheckAdjoint(ts));
  PetscCall(NetTSLinearize_Private(ts, ctx, u));
  PetscFunctionReturn(0);
}

/* y = J x (explicit: J_N x + J_g x; implicit: shift x - J_N x - J_g x) */
static PetscErrorCode MatMult_NetTSJacobian(Mat A, Vec x, Vec y)
{
  NetTS *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCall(NetTSEnsureLinearized_Private(ctx));
  PetscCall(NetJVP(ctx->net, x, NULL, y));
  if (ctx->Juser) PetscCall(MatMultAdd(ctx->Juser, x, y, y));
  if (ctx->implicit) PetscCall(VecAXPBY(y, ctx->shift, -1.0, x));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_NetTSJacobian(Mat A, Vec x, Vec y)
{
  NetTS *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCall(NetTSEnsureLinearized_Private(ctx));
  PetscCall(NetBackward(ctx->net, x, y, NULL));
  if (ctx->Juser) PetscCall(MatMultTransposeAdd(ctx->Juser, x, y, y));
  if (ctx->implicit) PetscCall(VecAXPBY(y, ctx->shift, -1.0, x));
  PetscFunctionReturn(0);
}

/* y = (+-) dN/dtheta v : the sign is - in the implicit form (dF/dtheta) */
static PetscErrorCode MatMult_NetTSJacobianP(Mat A, Vec v, Vec y)
{
  NetTS *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCall(NetTSEnsureLinearized_Private(ctx));
  PetscCall(NetJVP(ctx->net, NULL, v, y));
  if (ctx->implicit) PetscCall(VecScale(y, -1.0));
  PetscFunctionReturn(0);
}

static PetscErrorCode MatMultTranspose_NetTSJacobianP(Mat A, Vec y, Vec g)
{
  NetTS *ctx;

  PetscFunctionBegin;
  PetscCall(MatShellGetContext(A, &ctx));
  PetscCall(NetTSEnsureLinearized_Private(ctx));
  PetscCall(VecZeroEntries(g));
  PetscCall(NetBackward(ctx->net, y, NULL, g));
  if (ctx->implicit) PetscCall(VecScale(g, -1.0));
  PetscFunctionReturn(0);
}

/* After TSSetFromOptions() picked a type: refuse a change of family (the callbacks cannot be unset in PETSc). */
static PetscErrorCode NetTSOptionsHandler_Private(PetscObject obj, PetscOptionItems *PetscOptionsObject, void *unused)
{
  TS             ts = (TS)obj;
  PetscContainer container;

  PetscFunctionBegin;
  PetscCall(PetscObjectQuery(obj, NetTSKey, (PetscObject *)&container));
  if (container) {
    NetTS *ctx;

    PetscCall(PetscContainerGetPointer(container, (void **)&ctx));
    PetscCall(NetTSCheckForm_Private(ts, ctx));
  }
  PetscFunctionReturn(0);
}

/* Sets the TS callbacks for ctx's form */
static PetscErrorCode NetTSInstall_Private(TS ts, NetTS *ctx)
{
  PetscFunctionBegin;
  if (ctx->implicit) {
    PetscCall(TSSetIFunction(ts, NULL, NetTSIFunction_Private, ctx));
    PetscCall(TSSetIJacobian(ts, ctx->J, ctx->P ? ctx->P : ctx->J, NetTSIJacobian_Private, ctx));
    PetscCall(TSSetIJacobianP(ts, ctx->JP, NetTSIJacobianP_Private, ctx));
    PetscCall(TSSetRHSFunction(ts, NULL, NetTSRHSFunctionGuard_Private, ctx));
  } else {
    PetscCall(TSSetRHSFunction(ts, NULL, NetTSRHSFunction_Private, ctx));
    PetscCall(TSSetRHSJacobian(ts, ctx->J, ctx->J, NetTSRHSJacobian_Private, ctx));
    PetscCall(TSSetRHSJacobianP(ts, ctx->JP, NetTSRHSJacobianP_Private, ctx));
  }
  PetscFunctionReturn(0);
}

/*@C
  NetTSSetRHS - makes the Net the right-hand side of the TS: du/dt = N(u; theta) (add a user part with NetTSSetUserRHS()).

  Collective on ts

  Input Parameters:
+ ts  - the TS; its type decides the form (explicit types: RHS form; others: implicit form F = udot - N(u)), so set the
        type first. Without a type, TSRK is set.
. net - the Net; its output shape must equal its input shape. The TS keeps a reference.
- u   - a state Vec, for the layout only (e.g. the initial condition); NULL uses the TS solution Vec

  Notes:
  The local part of u is a batch of samples of the Net's input shape: a DMDA global Vec with dof = c is a batch of grid
  points for a Net with input shape c. The parameters are NetGetParameters(net): TSSetCostGradients()' mu must have that
  layout (NetCreateParameterVec()). For TSAdjointSolve() also call NetTSSetSaveTrajectory() before TSSolve().
  Implicit methods solve with the Jacobian shell: its preconditioner is none (a PC that needs matrix entries is replaced,
  unless NetTSSetUserRHS() gives an assembled matrix), and KSP's default rtol (1e-5) limits the accuracy of the
  adjoint: tighten -ksp_rtol (and -snes_rtol) for exact gradients. A later TSSetFromOptions() whose -ts_type belongs to
  the other family (explicit vs implicit) is refused with an error: call NetTSSetRHS() again after changing the type.

  Level: beginner

.seealso: `NetTSSetUserRHS()`, `NetTSGetNet()`, `NetTSGetImplicit()`, `NetTSSetSaveTrajectory()`, `NetTSCheckAdjoint()`,
          `NetTSTimeSeriesGradient()`, `NetDMDATSSetRHS()`, `NetGetJacobian()`, `NetGetJacobianP()`
@*/
PetscErrorCode NetTSSetRHS(TS ts, Net net, Vec u)
{
  NetTS         *ctx;
  PetscContainer container, old;
  PetscInt       insize, n, N, np, NP;
  PetNetShape    in, out;
  Vec            theta;
  TSType         type;
  PetscBool explicit;
  MPI_Comm comm;
  VecType  vtype;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  PetscValidHeaderSpecific(net, NET_CLASSID, 2);
  comm = PetscObjectComm((PetscObject)ts);
  PetscCall(NetTSInitializePackage());
  if (!u) PetscCall(TSGetSolution(ts, &u));
  PetscCheck(u, comm, PETSC_ERR_ARG_NULL, "NetTSSetRHS() needs a state Vec for the layout: pass one (e.g. the initial condition) or call TSSetSolution() first");
  PetscValidHeaderSpecific(u, VEC_CLASSID, 3);
  PetscCall(NetSetUp(net));
  PetscCall(NetGetInputShape(net, &in));
  PetscCall(NetGetOutputShape(net, &out));
  PetscCheck(PetNetShapeEqual(&in, &out), comm, PETSC_ERR_ARG_INCOMP, "A Net right-hand side must map its input shape to itself: give it output size equal to the input size (e.g. end with dense:<input size>)");
  PetscCall(PetNetShapeSize(&in, &insize));
  PetscCall(VecGetLocalSize(u, &n));
  PetscCall(VecGetSize(u, &N));
  PetscCheck(n % insize == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_SIZ, "The state has %" PetscInt_FMT " local entries, not a multiple of the Net's sample size %" PetscInt_FMT ": lay it out as whole samples (a DMDA with dof = %" PetscInt_FMT ")", n,
             insize, insize);
  PetscCall(TSGetType(ts, &type));
  if (!type) PetscCall(TSSetType(ts, TSRK));
  PetscCall(NetTSIsExplicitType_Private(ts, &explicit));

  PetscCall(PetscNew(&ctx));
  PetscCall(PetscObjectReference((PetscObject)net));
  ctx->net      = net;
  ctx->implicit = explicit ? PETSC_FALSE : PETSC_TRUE;
  PetscCall(VecDuplicate(u, &ctx->ulin));
  PetscCall(VecDuplicate(u, &ctx->fwork));
  PetscCall(VecGetType(u, &vtype));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecGetLocalSize(theta, &np));
  PetscCall(VecGetSize(theta, &NP));
  PetscCall(MatCreateShell(comm, n, n, N, N, ctx, &ctx->J));
  PetscCall(MatShellSetOperation(ctx->J, MATOP_MULT, (void (*)(void))MatMult_NetTSJacobian));
  PetscCall(MatShellSetOperation(ctx->J, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_NetTSJacobian));
  PetscCall(MatShellSetVecType(ctx->J, vtype));
  PetscCall(MatCreateShell(comm, n, np, N, NP, ctx, &ctx->JP));
  PetscCall(MatShellSetOperation(ctx->JP, MATOP_MULT, (void (*)(void))MatMult_NetTSJacobianP));
  PetscCall(MatShellSetOperation(ctx->JP, MATOP_MULT_TRANSPOSE, (void (*)(void))MatMultTranspose_NetTSJacobianP));

  PetscCall(PetscObjectQuery((PetscObject)ts, NetTSKey, (PetscObject *)&old));
  if (!old) PetscCall(PetscObjectAddOptionsHandler((PetscObject)ts, NetTSOptionsHandler_Private, NULL, NULL));
  PetscCall(PetscContainerCreate(comm, &container));
  PetscCall(PetscContainerSetPointer(container, ctx));
  PetscCall(PetscContainerSetUserDestroy(container, NetTSDestroyContext_Private));
  PetscCall(PetscObjectCompose((PetscObject)ts, NetTSKey, (PetscObject)container)); /* replaces (and frees) an older one */
  PetscCall(PetscContainerDestroy(&container));
  PetscCall(NetTSInstall_Private(ts, ctx));
  PetscFunctionReturn(0);
}

/*@C
  NetTSSetUserRHS - adds the user's part to the right-hand side set by NetTSSetRHS():  du/dt = N(u; theta) + g(t, u).

  Logically collective on ts

  Input Parameters:
+ ts   - the TS, after NetTSSetRHS()
. rhs  - g(ts, t, u, G, ctx): G = g(t, u) (overwrite G)
. Jg   - a Mat for dg/du (assembled, e.g. from DMCreateMatrix() for a DMDA stencil operator, or a MATSHELL with MatMult
         and MatMultTranspose). The TS keeps a reference.
. jac  - jac(ts, t, u, Jg, ctx): assembles Jg at (t, u); NULL if Jg is constant
- uctx - the user context of rhs and jac

  Notes:
  The TS gets the sum: its Jacobian shell applies J_N + J_g (and the transpose), so TSAdjointSolve() differentiates the
  whole right-hand side; the parameter Jacobian is the Net's alone (g has no trained parameters). In the implicit form an
  assembled Jg also gives the preconditioner matrix shift I - Jg, so -pc_type ilu, jacobi, mg... precondition the
  stiff user part (e.g. diffusion) while the Net's term stays matrix-free.

  Level: intermediate

.seealso: `NetTSSetRHS()`, `NetDMDACreateJacobian()`, `NetDMDATSSetRHS()`
@*/
PetscErrorCode NetTSSetUserRHS(TS ts, PetscErrorCode (*rhs)(TS, PetscReal, Vec, Vec, void *), Mat Jg, PetscErrorCode (*jac)(TS, PetscReal, Vec, Mat, void *), void *uctx)
{
  NetTS    *ctx;
  PetscBool isshell;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  PetscCall(NetTSGetContext_Private(ts, &ctx));
  PetscCheck(rhs, PetscObjectComm((PetscObject)ts), PETSC_ERR_ARG_NULL, "NetTSSetUserRHS() needs the function g(t, u)");
  PetscCheck(Jg, PetscObjectComm((PetscObject)ts), PETSC_ERR_ARG_NULL, "NetTSSetUserRHS() needs a Mat for dg/du: the adjoint differentiates the whole right-hand side");
  PetscValidHeaderSpecific(Jg, MAT_CLASSID, 3);
  PetscCall(PetscObjectReference((PetscObject)Jg));
  PetscCall(MatDestroy(&ctx->Juser));
  PetscCall(MatDestroy(&ctx->P));
  ctx->Juser   = Jg;
  ctx->userrhs = rhs;
  ctx->userjac = jac;
  ctx->userctx = uctx;
  PetscCall(PetscObjectTypeCompare((PetscObject)Jg, MATSHELL, &isshell));
  if (ctx->implicit && !isshell) {
    PetscCall(MatAssemblyBegin(Jg, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(Jg, MAT_FINAL_ASSEMBLY));
    PetscCall(MatDuplicate(Jg, MAT_COPY_VALUES, &ctx->P));
  }
  PetscCall(NetTSInstall_Private(ts, ctx));
  PetscFunctionReturn(0);
}

/*@
  NetTSGetNet - gets the Net that NetTSSetRHS() made the right-hand side of a TS

  Not collective

  Input Parameter:
. ts - the TS, after NetTSSetRHS() (an error otherwise)

  Output Parameter:
. net - the Net, borrowed: do not destroy it

  Level: intermediate

.seealso: `NetTSSetRHS()`, `NetTSGetImplicit()`
@*/
PetscErrorCode NetTSGetNet(TS ts, Net *net)
{
  NetTS *ctx;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  PetscCall(NetTSGetContext_Private(ts, &ctx));
  *net = ctx->net;
  PetscFunctionReturn(0);
}

/*@
  NetTSGetImplicit - tells which form NetTSSetRHS() installed on a TS

  Not collective

  Input Parameter:
. ts - the TS, after NetTSSetRHS() (an error otherwise)

  Output Parameter:
. implicit - `PETSC_TRUE` for the implicit form F = udot - N(u) (IFunction, IJacobian, IJacobianP), `PETSC_FALSE` for
             the RHS form (RHSFunction, RHSJacobian, RHSJacobianP)

  Level: advanced

.seealso: `NetTSSetRHS()`, `NetTSGetNet()`
@*/
PetscErrorCode NetTSGetImplicit(TS ts, PetscBool *implicit)
{
  NetTS *ctx;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  PetscCall(NetTSGetContext_Private(ts, &ctx));
  *implicit = ctx->implicit;
  PetscFunctionReturn(0);
}
