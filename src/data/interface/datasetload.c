/* Dataset: what every kind's load shares: sizes and layout, storage, copying, normalization, classes. */
#include <petnet/private/datasetimpl.h>

/*
  DatasetCheckFile_Private - a clear error when a file the Dataset needs is missing; what says which one ("images").
*/
PetscErrorCode DatasetCheckFile_Private(Dataset ds, const char file[], const char what[])
{
  PetscBool exists;

  PetscFunctionBegin;
  PetscCall(PetscTestFile(file, 'r', &exists));
  PetscCheck(exists, PetscObjectComm((PetscObject)ds), PETSC_ERR_FILE_OPEN, "Cannot read the %s file \"%s\": it does not exist or is not readable", what, file);
  PetscFunctionReturn(0);
}

/*
  DatasetSetSizes_Private - records what the source holds (nsource samples of shape source, targets of tsize entries),
  applies the user's sample shape and the limit, and lays the N used samples out over the ranks (PETSC_DECIDE).
*/
PetscErrorCode DatasetSetSizes_Private(Dataset ds, PetscInt nsource, const PetNetShape *source, PetscInt tsize)
{
  PetscInt F, Fset;
  char     s1[64], s2[64];

  PetscFunctionBegin;
  PetscCheck(nsource > 0, PetscObjectComm((PetscObject)ds), PETSC_ERR_FILE_UNEXPECTED, "The %s dataset holds no samples", ((PetscObject)ds)->type_name);
  PetscCheck(tsize > 0, PetscObjectComm((PetscObject)ds), PETSC_ERR_FILE_UNEXPECTED, "The %s dataset has no targets", ((PetscObject)ds)->type_name);
  PetscCall(PetNetShapeSize(source, &F));
  ds->shape = *source;
  if (ds->shapeset.ndim) {
    PetscCall(PetNetShapeSize(&ds->shapeset, &Fset));
    PetscCall(PetNetShapeToString(&ds->shapeset, sizeof(s1), s1));
    PetscCall(PetNetShapeToString(source, sizeof(s2), s2));
    PetscCheck(Fset == F, PetscObjectComm((PetscObject)ds), PETSC_ERR_ARG_INCOMP, "-dataset_sample_shape %s has %" PetscInt_FMT " entries, but the samples of the source have %" PetscInt_FMT " (shape %s)", s1, Fset, F, s2);
    ds->shape = ds->shapeset;
  }
  PetscCheck(F > 0, PetscObjectComm((PetscObject)ds), PETSC_ERR_FILE_UNEXPECTED, "The %s dataset has empty samples", ((PetscObject)ds)->type_name);
  ds->F       = F;
  ds->tsize   = tsize;
  ds->nsource = nsource;
  ds->N       = ds->limit > 0 ? PetscMin(ds->limit, nsource) : nsource;
  PetscCall(PetscLayoutDestroy(&ds->map));
  PetscCall(PetscLayoutCreateFromSizes(PetscObjectComm((PetscObject)ds), PETSC_DECIDE, ds->N, 1, &ds->map));
  PetscFunctionReturn(0);
}

/* A Vec of N samples of bs entries each, laid out by ds->map: [nlocal][bs] */
static PetscErrorCode DatasetCreateSampleVec_Private(Dataset ds, PetscInt bs, Vec *v)
{
  PetscFunctionBegin;
  PetscCall(VecCreate(PetscObjectComm((PetscObject)ds), v));
  PetscCall(VecSetSizes(*v, ds->map->n * bs, ds->N * bs));
  PetscCall(VecSetBlockSize(*v, bs));
  PetscCall(VecSetType(*v, VECSTANDARD));
  PetscFunctionReturn(0);
}

/*
  DatasetCreateStorage_Private - creates ds->inputs [nlocal][F] and ds->targets [nlocal][tsize] for a kind that
  writes this rank's samples itself.
*/
PetscErrorCode DatasetCreateStorage_Private(Dataset ds)
{
  PetscFunctionBegin;
  PetscCall(VecDestroy(&ds->inputs));
  PetscCall(VecDestroy(&ds->targets));
  PetscCall(DatasetCreateSampleVec_Private(ds, ds->F, &ds->inputs));
  PetscCall(DatasetCreateSampleVec_Private(ds, ds->tsize, &ds->targets));
  PetscCall(PetscObjectSetName((PetscObject)ds->inputs, "inputs"));
  PetscCall(PetscObjectSetName((PetscObject)ds->targets, "targets"));
  PetscFunctionReturn(0);
}

/*
  DatasetCopySamples_Private - dst = the first N samples (bs entries each) of src, laid out by ds->map.
  src holds the source's samples in global order, in any parallel layout.
*/
PetscErrorCode DatasetCopySamples_Private(Dataset ds, Vec src, PetscInt bs, Vec *dst)
{
  IS         is;
  VecScatter scatter;
  PetscInt   size;

  PetscFunctionBegin;
  PetscCall(VecGetSize(src, &size));
  PetscCheck(size >= ds->N * bs, PetscObjectComm((PetscObject)ds), PETSC_ERR_PLIB, "Source Vec has %" PetscInt_FMT " entries, fewer than %" PetscInt_FMT " samples of %" PetscInt_FMT, size, ds->N, bs);
  PetscCall(DatasetCreateSampleVec_Private(ds, bs, dst));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, ds->map->n * bs, ds->map->rstart * bs, 1, &is));
  PetscCall(VecScatterCreate(src, is, *dst, NULL, &scatter));
  PetscCall(VecScatterBegin(scatter, src, *dst, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(scatter, src, *dst, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&scatter));
  PetscCall(ISDestroy(&is));
  PetscFunctionReturn(0);
}

static void DatasetAffine_Private(Dataset ds, PetscReal *a, PetscReal *b)
{
  PetscReal scale = ds->scaleset ? ds->scale : ds->defaultscale;

  *a = scale / ds->std;
  *b = -ds->mean / ds->std;
}

PetscErrorCode DatasetNormalizationIsIdentity_Private(Dataset ds, PetscBool *identity)
{
  PetscReal a, b;

  PetscFunctionBegin;
  DatasetAffine_Private(ds, &a, &b);
  *identity = (PetscBool)(a == 1.0 && b == 0.0);
  PetscFunctionReturn(0);
}

/* inputs x -> (scale x - mean) / std = a x + b, in one pass */
PetscErrorCode DatasetNormalize_Private(Dataset ds)
{
  PetscReal    a, b;
  PetscInt     n;
  PetscScalar *x;

  PetscFunctionBegin;
  DatasetAffine_Private(ds, &a, &b);
  if (a == 1.0 && b == 0.0) PetscFunctionReturn(0);
  PetscCall(VecGetLocalSize(ds->inputs, &n));
  PetscCall(VecGetArray(ds->inputs, &x));
  for (PetscInt i = 0; i < n; i++) x[i] = a * x[i] + b;
  PetscCall(VecRestoreArray(ds->inputs, &x));
  PetscCall(PetscLogFlops(2.0 * n));
  PetscFunctionReturn(0);
}

/*
  DatasetFindClasses_Private - the number of classes: declared (labels checked to be integers in [0, C)), or inferred
  as 1 + the largest label when every target is a single non-negative integer, else 0 (regression).
*/
PetscErrorCode DatasetFindClasses_Private(Dataset ds)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)ds);
  const PetscScalar *t;
  PetscInt           n, C = ds->nclassesset, bad = PETSC_MAX_INT, maxlabel = -1;
  PetscReal          badvalue = PETSC_MIN_REAL;
  PetscBool          labels   = (PetscBool)(ds->tsize == 1);

  PetscFunctionBegin;
  if (C == 0) {
    ds->nclasses = 0;
    PetscFunctionReturn(0);
  }
  PetscCheck(C < 0 || ds->tsize == 1, comm, PETSC_ERR_ARG_INCOMP, "%" PetscInt_FMT " classes were declared (-dataset_num_classes), but the targets of %s have %" PetscInt_FMT " entries per sample: class labels have one", C,
             ds->tsource ? ds->tsource : "the dataset", ds->tsize);
  PetscCall(VecGetLocalSize(ds->targets, &n));
  PetscCall(VecGetArrayRead(ds->targets, &t));
  for (PetscInt i = 0; i < n && labels; i++) {
    PetscReal v       = PetscRealPart(t[i]);
    PetscBool islabel = (PetscBool)(v >= 0 && v == PetscFloorReal(v) && v < PETSC_MAX_INT && (C < 0 || v < C));

    if (!islabel) {
      if (C > 0) {
        bad      = ds->map->rstart + i;
        badvalue = v;
      }
      labels = PETSC_FALSE;
    } else
      maxlabel = PetscMax(maxlabel, (PetscInt)v);
  }
  PetscCall(VecRestoreArrayRead(ds->targets, &t));
  if (C > 0) {
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bad, 1, MPIU_INT, MPI_MIN, comm));
    if (bad != PETSC_MAX_INT && (bad < ds->map->rstart || bad >= ds->map->rend)) badvalue = PETSC_MIN_REAL;
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &badvalue, 1, MPIU_REAL, MPIU_MAX, comm));
    PetscCheck(bad == PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED, "Sample %" PetscInt_FMT " of %s has label %.6g, which is not a class in [0, %" PetscInt_FMT "): fix the labels or -dataset_num_classes", bad,
               ds->tsource ? ds->tsource : "the dataset", (double)badvalue, C);
    ds->nclasses = C;
  } else {
    PetscInt notlabels[2] = {labels ? 0 : 1, maxlabel};

    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, notlabels, 2, MPIU_INT, MPI_MAX, comm));
    ds->nclasses = notlabels[0] ? 0 : notlabels[1] + 1;
  }
  PetscFunctionReturn(0);
}
