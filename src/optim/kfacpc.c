/*
  The K-FAC inverse as a preconditioner: a PCSHELL applying F^{-1} blockwise (kfacfactors.c) to vectors laid out like a
  Net's parameters, for Krylov solves with the Net's curvature operators (the Gauss-Newton or Hessian shells that
  TAO's Newton-CG solvers nls and ntr solve with). The statistics come from the forward and backward pass of the mean
  loss that the caller chooses, usually the sub-sample on which the Hessian is taken (PetNetPCKFACUpdateStatistics());
  the inverses are recomputed at the first application after new statistics.
*/
#include "kfacimpl.h"

#define PCKFAC_NAME "K-FAC"

static PetscErrorCode PCApply_KFAC(PC pc, Vec x, Vec y)
{
  PetNetKFAC kfac;

  PetscFunctionBegin;
  PetscCall(PCShellGetContext(pc, &kfac));
  PetscCheck(kfac->nupdates > 0, PetscObjectComm((PetscObject)pc), PETSC_ERR_ORDER, "The K-FAC preconditioner has no statistics: call PetNetPCKFACUpdateStatistics() after a NetForward() and NetBackward() of the mean loss before the solve");
  if (kfac->ninverted != kfac->nupdates) PetscCall(PetNetKFACInvert(kfac));
  PetscCall(PetNetKFACApply(kfac, x, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCView_KFAC(PC pc, PetscViewer viewer)
{
  PetNetKFAC kfac;
  PetscBool  isascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  if (!isascii) PetscFunctionReturn(0);
  PetscCall(PCShellGetContext(pc, &kfac));
  PetscCall(PetscViewerASCIIPrintf(viewer, "damping %g, statistics decay %g\n", (double)kfac->damping, (double)kfac->decay));
  PetscCall(PetNetKFACView(kfac, viewer));
  PetscFunctionReturn(0);
}

static PetscErrorCode PCDestroy_KFAC(PC pc)
{
  PetNetKFAC kfac;

  PetscFunctionBegin;
  PetscCall(PCShellGetContext(pc, &kfac));
  PetscCall(PetNetKFACDestroy(&kfac));
  PetscCall(PCShellSetContext(pc, NULL));
  PetscFunctionReturn(0);
}

/* The K-FAC context of pc, or NULL when pc is not a K-FAC preconditioner */
static PetscErrorCode PCGetKFAC_Private(PC pc, PetNetKFAC *kfac)
{
  PetscBool   isshell, same = PETSC_FALSE;
  const char *name;

  PetscFunctionBegin;
  *kfac = NULL;
  PetscCall(PetscObjectTypeCompare((PetscObject)pc, PCSHELL, &isshell));
  if (!isshell) PetscFunctionReturn(0);
  PetscCall(PCShellGetName(pc, &name));
  if (name) PetscCall(PetscStrcmp(name, PCKFAC_NAME, &same));
  if (same) PetscCall(PCShellGetContext(pc, kfac));
  PetscFunctionReturn(0);
}

/*@
  PetNetPCSetKFAC - makes a PC the K-FAC preconditioner of a Net: a PCSHELL applying the inverse of the
  Kronecker-factored Fisher of its dense, conv2d and conv3d layers to vectors laid out like its parameters

  Collective on pc

  Input Parameters:
+ pc  - the PC, e.g. of the KSP inside a TAO Newton solver (TaoGetKSP(), KSPGetPC()); it becomes a PCSHELL
- net - the Net, set up; the PC takes a reference to it

  Options Database Keys (with the PC's prefix):
+ -pc_kfac_damping <1e-3>          - Tikhonov damping lambda, split between the factors as in `TAOKFAC`
. -pc_kfac_stat_decay <0>          - running average over successive statistics (0: the last pass only)
- -pc_kfac_uncovered_gradient      - leave the parameters of other parameterised layer kinds unpreconditioned
                                     (identity) instead of refusing the network

  Notes:
  Give it statistics with PetNetPCKFACUpdateStatistics() after a NetForward() and NetBackward() of the mean loss, e.g.
  on the sub-sample of a Hessian-free Newton iteration; the inverses are recomputed at the next application. The
  factors, damping and layout are those of `TAOKFAC`: on a block (one dense layer, or one conv2d or conv3d group) it applies
  (S + sqrt(lambda)/pi I)^{-1} G (A + pi sqrt(lambda) I)^{-1}; parameters of uncovered layers are copied.
  A Net with a parameterised layer that is not dense, conv2d or conv3d in batch mode is an error naming the layer, unless
  -pc_kfac_uncovered_gradient is given. Any parallel mode of the Net works: in replicated mode every rank holds every
  factor, in sharded and model modes each block's factors live on its owner, the rank that owns the most of its
  weights (PetNetPCKFACGetFactorEntries()).

  Level: intermediate

.seealso: `PetNetPCKFACUpdateStatistics()`, `TAOKFAC`, `PetNetTaoKFACSetNet()`, `PCSHELL`
@*/
PetscErrorCode PetNetPCSetKFAC(PC pc, Net net)
{
  PetNetKFAC  kfac;
  PetscReal   damping = 1e-3, decay = 0.0;
  PetscBool   uncovered = PETSC_FALSE;
  const char *prefix;
  char        option[256];

  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscValidHeaderSpecific(net, NET_CLASSID, 2);
  PetscCheckSameComm(pc, 1, net, 2);
  PetscObjectOptionsBegin((PetscObject)pc);
  PetscCall(PetscOptionsReal("-pc_kfac_damping", "K-FAC Tikhonov damping lambda", "PetNetPCSetKFAC", damping, &damping, NULL));
  PetscCall(PetscOptionsReal("-pc_kfac_stat_decay", "Decay of the running averages of the K-FAC factors (0: the last statistics only)", "PetNetPCSetKFAC", decay, &decay, NULL));
  PetscCall(PetscOptionsBool("-pc_kfac_uncovered_gradient", "Leave the parameters of layers K-FAC does not cover unpreconditioned instead of refusing them", "PetNetPCSetKFAC", uncovered, &uncovered, NULL));
  PetscOptionsEnd();
  PetscCheck(damping > 0, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE, "The K-FAC damping (-pc_kfac_damping) must be > 0, not %g", (double)damping);
  PetscCheck(decay >= 0 && decay < 1, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_OUTOFRANGE, "The K-FAC statistics decay (-pc_kfac_stat_decay) must be in [0, 1), not %g", (double)decay);
  PetscCall(PCGetOptionsPrefix(pc, &prefix));
  PetscCall(PetscSNPrintf(option, sizeof(option), "-%spc_kfac_uncovered_gradient", prefix ? prefix : ""));
  PetscCall(PetNetKFACCreate(net, uncovered, option, &kfac));
  PetscCall(PetNetKFACSetDamping(kfac, damping));
  PetscCall(PetNetKFACSetDecay(kfac, decay));
  { /* a PC that already was K-FAC drops its old factors */
    PetNetKFAC old;

    PetscCall(PCGetKFAC_Private(pc, &old));
    PetscCall(PetNetKFACDestroy(&old));
  }
  PetscCall(PCSetType(pc, PCSHELL));
  PetscCall(PCShellSetContext(pc, kfac));
  PetscCall(PCShellSetName(pc, PCKFAC_NAME));
  PetscCall(PCShellSetApply(pc, PCApply_KFAC));
  PetscCall(PCShellSetView(pc, PCView_KFAC));
  PetscCall(PCShellSetDestroy(pc, PCDestroy_KFAC));
  PetscFunctionReturn(0);
}

/*@
  PetNetPCKFACUpdateStatistics - gives the K-FAC preconditioner the factor statistics of the Net's last forward and
  backward pass (and of those added before with PetNetPCKFACAddStatistics())

  Collective on pc

  Input Parameter:
. pc - a PC made by PetNetPCSetKFAC()

  Notes:
  Call it after NetForward() on a batch and NetBackward() of the cotangent of the mean loss over that batch (the
  gradient pass), before the Krylov solve. The factors are summed over the ranks (to their owners in sharded and model
  modes); with -pc_kfac_stat_decay d they are
  averaged with the previous ones (F <- d F + (1 - d) F_new). The inverses are recomputed at the next PCApply().

  Level: intermediate

.seealso: `PetNetPCSetKFAC()`, `PetNetPCKFACAddStatistics()`, `NetForward()`, `NetBackward()`
@*/
PetscErrorCode PetNetPCKFACUpdateStatistics(PC pc)
{
  PetNetKFAC kfac;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscCall(PCGetKFAC_Private(pc, &kfac));
  PetscCheck(kfac, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG, "The PC is not a K-FAC preconditioner: call PetNetPCSetKFAC() first");
  PetscCall(PetNetKFACUpdateStatistics(kfac));
  PetscFunctionReturn(0);
}

/*@
  PetNetPCKFACAddStatistics - adds the factor statistics of the Net's last forward and backward pass to those of the
  next PetNetPCKFACUpdateStatistics(), for a batch processed in several passes (chunks)

  Collective on pc

  Input Parameter:
. pc - a PC made by PetNetPCSetKFAC()

  Notes:
  For a batch too large for one pass: for every chunk but the last, NetForward(), NetBackward() of the cotangent of the
  mean loss over that chunk, and this; for the last chunk PetNetPCKFACUpdateStatistics(). The factors are those of the
  whole batch, as if it had been one pass (each chunk's cotangents are rescaled by its size).

  Level: intermediate

.seealso: `PetNetPCKFACUpdateStatistics()`, `PetNetPCSetKFAC()`
@*/
PetscErrorCode PetNetPCKFACAddStatistics(PC pc)
{
  PetNetKFAC kfac;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscCall(PCGetKFAC_Private(pc, &kfac));
  PetscCheck(kfac, PetscObjectComm((PetscObject)pc), PETSC_ERR_ARG_WRONG, "The PC is not a K-FAC preconditioner: call PetNetPCSetKFAC() first");
  PetscCall(PetNetKFACAddStatistics(kfac));
  PetscFunctionReturn(0);
}

/*@
  PetNetPCKFACGetFactorEntries - how many entries of the K-FAC factors this rank holds, and how many one copy of all of
  them has

  Not collective

  Input Parameter:
. pc - a PC made by PetNetPCSetKFAC()

  Output Parameters:
+ held    - the entries of the factors A and S and of their damped inverses that this rank keeps
- onecopy - the entries of one copy of all of them (2 (na^2 + nout^2) per block)

  Notes:
  With -net_parallel replicated every rank holds a whole copy (held == onecopy); with -net_parallel sharded or model
  each block's factors live only on its owner, the rank that owns the most of the block's weights, so the held counts
  of the ranks add up to onecopy.

  Level: advanced

.seealso: `PetNetPCSetKFAC()`, `PetNetTaoKFACGetFactorEntries()`
@*/
PetscErrorCode PetNetPCKFACGetFactorEntries(PC pc, PetscInt64 *held, PetscInt64 *onecopy)
{
  PetNetKFAC kfac;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(pc, PC_CLASSID, 1);
  PetscValidPointer(held, 2);
  PetscValidPointer(onecopy, 3);
  PetscCall(PCGetKFAC_Private(pc, &kfac));
  PetscCheck(kfac, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "The PC is not a K-FAC preconditioner: call PetNetPCSetKFAC() first");
  PetscCall(PetNetKFACGetFactorEntries(kfac, held, onecopy));
  PetscFunctionReturn(0);
}
