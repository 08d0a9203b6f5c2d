/*
  Which integrators have a correct discrete adjoint in this PETSc, and the trajectory default.

  PETSc 3.18 has TSAdjoint for TSRK and TSTHETA (beuler, cn, theta) only. Before 3.21.4, TSAdjointStep_RK forgets the
  parameter part of a stage whose weight b_i is zero (it rescales the previous stage's dmu instead of computing
  f_p^T lambda_i), so the parameter gradients are wrong for 5dp, 5f and 5bs; the last stage of an FSAL tableau (3bs)
  is skipped correctly. The check below reads the tableau, so it also covers tableaus registered by the user.
*/
#include "nettsimpl.h"

/*@
  NetTSCheckAdjoint - errors out, naming the option to change, if TSAdjointSolve() on this TS would fail or give wrong
  gradients in this PETSc: types without an adjoint (everything but rk, theta, beuler, cn), and with PETSc < 3.21.4 RK
  tableaus with a zero weight (5dp, 5f, 5bs, and the 6vr, 7vr, 8vr tableaus).
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
  NetTSSetSaveTrajectory - TSSetSaveTrajectory() with an in-memory trajectory by default (TSTRAJECTORYMEMORY): PETSc's
  own default (basic) writes TS-data-* folders into the working directory. The trajectory gets the TS's options prefix;
  -<prefix>ts_trajectory_type still overrides, e.g. with the bounded-memory checkpoint (TSTRAJECTORYCHECKPOINT).
  TSAdjointSolve() consumes the trajectory; a TSSolve() that is not followed by TSAdjointSolve() leaves its checkpoints
  behind: call TSTrajectoryReset() (TSGetTrajectory()) before the next TSSolve() in that case.
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
