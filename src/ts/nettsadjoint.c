/*
  Which integrators have a correct discrete adjoint in this PETSc, and the trajectory default.

  PETSc 3.18 has TSAdjoint for TSRK and TSTHETA (beuler, cn, theta) only. Before 3.21.4, TSAdjointStep_RK forgets the
  parameter part of a stage whose weight b_i is zero (it rescales the previous stage's dmu instead of computing
  f_p^T lambda_i), so the parameter gradients are wrong for 5dp, 5f and 5bs; the last stage of an FSAL tableau (3bs)
  is skipped correctly. The check below reads the tableau, so it also covers tableaus registered by the user.
*/
#include "nettsimpl.h"

/*@
  NetTSCheckAdjoint - errors out, naming the option to change, when TSAdjointSolve() on a TS would fail or give wrong
  gradients in this PETSc

  Collective on ts

  Input Parameter:
. ts - the TS, its type set

  Notes:
  Refused: every type but rk, theta, beuler and cn (euler: use -ts_type rk -ts_rk_type 1fe, the same method with an
  adjoint); multirate RK; and with PETSc < 3.21.4 RK tableaus with a zero weight b_i that is not the last stage of an
  FSAL tableau (5dp, 5f, 5bs, 6vr, 7vr, 8vr), whose parameter gradients TSAdjoint gets wrong. The tableau is read, so
  tableaus registered by the user are checked too. NetTSSetRHS()'s parameter Jacobians and NetTSTimeSeriesGradient()
  call it, so sensitivity analysis through a Net never silently returns a wrong gradient.

  Level: intermediate

.seealso: `NetTSSetRHS()`, `NetTSSetSaveTrajectory()`, `NetTSTimeSeriesGradient()`
@*/
PetscErrorCode NetTSCheckAdjoint(TS ts)
{
  PetscBool   ok, isrk, multirate;
  const char *prefix;
  TSType      type;
  MPI_Comm    comm;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  comm = PetscObjectComm((PetscObject)ts);
  PetscCall(TSGetOptionsPrefix(ts, &prefix));
  if (!prefix) prefix = "";
  PetscCall(TSGetType(ts, &type));
  PetscCall(PetscObjectTypeCompare((PetscObject)ts, TSEULER, &ok));
  PetscCheck(!ok, comm, PETSC_ERR_SUP, "TS type euler (-%sts_type euler) has no adjoint in PETSc %d.%d.%d: use -%sts_type rk -%sts_rk_type 1fe, the same forward Euler method with an adjoint (or -%sts_rk_type 4, or -%sts_type cn)", prefix,
             PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR, prefix, prefix, prefix, prefix);
  PetscCall(PetscObjectTypeCompareAny((PetscObject)ts, &ok, TSRK, TSTHETA, TSBEULER, TSCN, ""));
  PetscCheck(ok, comm, PETSC_ERR_SUP, "TS type %s (-%sts_type %s) has no adjoint in PETSc %d.%d.%d (only rk, theta, beuler and cn have one): use -%sts_type rk -%sts_rk_type 4 or -%sts_type cn", type, prefix, type, PETSC_VERSION_MAJOR,
             PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR, prefix, prefix, prefix);
  PetscCall(PetscObjectTypeCompare((PetscObject)ts, TSRK, &isrk));
  if (!isrk) PetscFunctionReturn(0);
  PetscCall(TSRKGetMultirate(ts, &multirate));
  PetscCheck(!multirate, comm, PETSC_ERR_SUP, "Multirate RK (-%sts_rk_multirate) has no adjoint in PETSc %d.%d.%d: drop the option, or use -%sts_rk_type 4 or -%sts_type cn", prefix, PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR,
             prefix, prefix);
#if PETSC_VERSION_LT(3, 21, 4)
  {
    PetscInt         s;
    const PetscReal *b;
    PetscBool        fsal;
    TSRKType         rktype;

    PetscCall(TSRKGetType(ts, &rktype));
    PetscCall(TSRKGetTableau(ts, &s, NULL, &b, NULL, NULL, NULL, NULL, &fsal));
    for (PetscInt i = 0; i < s; i++) {
      if (b[i] != 0.0 || (fsal && i == s - 1)) continue;
      SETERRQ(comm, PETSC_ERR_SUP,
              "RK tableau %s (-%sts_rk_type %s) has the zero weight b_%" PetscInt_FMT ", for which TSAdjoint in PETSc %d.%d.%d computes wrong parameter gradients (fixed in 3.21.4): use -%sts_rk_type 4 (or 1fe, 2a, 3, 3bs) or -%sts_type cn", rktype,
              prefix, rktype, i + 1, PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR, prefix, prefix);
    }
  }
#endif
  PetscFunctionReturn(0);
}

/*@
  NetTSSetSaveTrajectory - TSSetSaveTrajectory() with an in-memory trajectory by default

  Collective on ts

  Input Parameter:
. ts - the TS

  Options Database Keys:
+ -ts_trajectory_type <memory,checkpoint,...> - the trajectory type, with the TS's prefix (default memory)
- -ts_trajectory_max_cps_ram <K>              - the most solutions the checkpoint trajectory keeps

  Notes:
  PETSc's own default trajectory (basic) writes TS-data-* folders into the working directory; this one is
  TSTRAJECTORYMEMORY unless a type was set. The trajectory gets the TS's options prefix. TSAdjointSolve() consumes the
  trajectory; a TSSolve() not followed by TSAdjointSolve() leaves its checkpoints behind: call TSTrajectoryReset()
  (on TSGetTrajectory()) before the next TSSolve() in that case.

  Level: intermediate

.seealso: `NetTSSetRHS()`, `NetTSCheckAdjoint()`, `TSTRAJECTORYCHECKPOINT`, `TSTrajectoryCheckpointSetMaxCheckpoints()`
@*/
PetscErrorCode NetTSSetSaveTrajectory(TS ts)
{
  TSTrajectory     tj;
  TSTrajectoryType type;
  const char      *prefix;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ts, TS_CLASSID, 1);
  PetscCall(NetTSInitializePackage());
  PetscCall(TSSetSaveTrajectory(ts));
  PetscCall(TSGetTrajectory(ts, &tj));
  PetscCall(TSGetOptionsPrefix(ts, &prefix));
  PetscCall(PetscObjectSetOptionsPrefix((PetscObject)tj, prefix)); /* -<prefix>ts_trajectory_* */
  PetscCall(TSTrajectoryGetType(tj, ts, &type));
  if (!type) PetscCall(TSTrajectorySetType(tj, ts, TSTRAJECTORYMEMORY));
  PetscFunctionReturn(0);
}
