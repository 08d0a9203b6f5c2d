/* Dataset: what every kind's load shares: sizes and layout, storage, copying, normalization, classes. */
#include <petnet/private/datasetimpl.h>
#include <unistd.h>

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
  DatasetCheckStorage_Private - before anything is allocated: n entries of a Vec read from file (what: "inputs") must
  be addressable with PetscInt, and the node's share of them must fit in its physical memory. n comes from the file's
  header, which a corrupt or hostile file can make as large as it likes: this turns a doomed allocation of many GB
  into an error naming the file.
*/
PetscErrorCode DatasetCheckStorage_Private(Dataset ds, const char file[], const char what[], PetscInt64 n)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)ds), node;
  PetscMPIInt size, nodesize;
  PetscInt64  pages = (PetscInt64)sysconf(_SC_PHYS_PAGES), pagesize = (PetscInt64)sysconf(_SC_PAGESIZE);
  double      bytes, memory                                         = pages > 0 && pagesize > 0 ? (double)pages * (double)pagesize : 0;

  PetscFunctionBegin;
  PetscCheck(n >= 0 && n <= PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s in \"%s\" would hold %" PetscInt64_FMT " entries, more than PETSc's 32-bit indices address (%d): the file is corrupt, or use a smaller dataset", what, file, n,
             PETSC_MAX_INT);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  PetscCallMPI(MPI_Comm_size(node, &nodesize));
  PetscCallMPI(MPI_Comm_free(&node));
  bytes = (double)n * sizeof(PetscScalar) * nodesize / size;
  PetscCheck(!memory || bytes <= memory, comm, PETSC_ERR_MEM, "The %s in \"%s\" need %.3g GB on this node, which has %.3g GB of memory: the file is corrupt, or use -dataset_limit or more nodes", what, file, bytes / 1e9, memory / 1e9);
  PetscFunctionReturn(0);
}

/*
  DatasetSetSizes_Private - records what the source holds (nsource samples of shape source, targets of tsize entries),
  applies the user's sample shape and the limit, and lays the N used samples out over the ranks (PETSC_DECIDE).
  The storage of N samples must be addressable with PetscInt (64-bit arithmetic, checked).
*/
PetscErrorCode DatasetSetSizes_Private(Dataset ds, PetscInt nsource, const PetNetShape *source, PetscInt tsize)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)ds);
  PetscInt F, Fset;
  char     s1[64], s2[64];

  PetscFunctionBegin;
  PetscCheck(nsource > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s dataset holds no samples", ((PetscObject)ds)->type_name);
  PetscCheck(tsize > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s dataset has no targets", ((PetscObject)ds)->type_name);
  PetscCall(PetNetShapeSize(source, &F));
  ds->shape = *source;
  if (ds->shapeset.ndim) {
    PetscCall(PetNetShapeSize(&ds->shapeset, &Fset));
    PetscCall(PetNetShapeToString(&ds->shapeset, sizeof(s1), s1));
    PetscCall(PetNetShapeToString(source, sizeof(s2), s2));
    PetscCheck(Fset == F, comm, PETSC_ERR_ARG_INCOMP, "-dataset_sample_shape %s has %" PetscInt_FMT " entries, but the samples of the source have %" PetscInt_FMT " (shape %s)", s1, Fset, F, s2);
    ds->shape = ds->shapeset;
  }
  PetscCheck(F > 0, comm, PETSC_ERR_FILE_UNEXPECTED, "The %s dataset has empty samples", ((PetscObject)ds)->type_name);
  ds->F       = F;
  ds->tsize   = tsize;
  ds->nsource = nsource;
  PetscCheck(ds->offset < nsource, comm, PETSC_ERR_ARG_OUTOFRANGE, "The dataset offset (-%sdataset_offset) %" PetscInt_FMT " is past the last sample of the source, which holds %" PetscInt_FMT ": give an offset below %" PetscInt_FMT,
             ((PetscObject)ds)->prefix ? ((PetscObject)ds)->prefix : "", ds->offset, nsource, nsource);
  ds->N = ds->limit > 0 ? PetscMin(ds->limit, nsource - ds->offset) : nsource - ds->offset;
  PetscCheck((PetscInt64)ds->N * F <= PETSC_MAX_INT && (PetscInt64)ds->N * tsize <= PETSC_MAX_INT, comm, PETSC_ERR_SUP,
             "%" PetscInt_FMT " samples of %" PetscInt_FMT " entries (targets of %" PetscInt_FMT ") need more than PETSc's 32-bit indices address (%d): use -dataset_limit", ds->N, F, tsize, PETSC_MAX_INT);
  PetscCall(PetscLayoutDestroy(&ds->map));
  PetscCall(PetscLayoutCreateFromSizes(comm, PETSC_DECIDE, ds->N, 1, &ds->map));
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
  DatasetCopySamples_Private - dst = the N samples from the offset on (bs entries each) of src, laid out by ds->map.
  src holds the source's samples in global order, in any parallel layout.
*/
PetscErrorCode DatasetCopySamples_Private(Dataset ds, Vec src, PetscInt bs, Vec *dst)
{
  IS         is;
  VecScatter scatter;
  PetscInt   size;

  PetscFunctionBegin;
  PetscCall(VecGetSize(src, &size));
  PetscCheck(size >= (ds->offset + ds->N) * bs, PetscObjectComm((PetscObject)ds), PETSC_ERR_PLIB, "Source Vec has %" PetscInt_FMT " entries, fewer than %" PetscInt_FMT " samples of %" PetscInt_FMT, size, ds->offset + ds->N, bs);
  PetscCall(DatasetCreateSampleVec_Private(ds, bs, dst));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, ds->map->n * bs, (ds->offset + ds->map->rstart) * bs, 1, &is));
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
  The first sample (index in the source file, smallest over the ranks) whose value is not finite: entries of
  ds->inputs (what "input") or of ds->targets ("target"); PETSC_MAX_INT when all are. Collective.
*/
static PetscErrorCode DatasetFindNonFinite_Private(Dataset ds, Vec v, PetscInt bs, PetscInt *bad, PetscReal *value)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)ds);
  const PetscScalar *a;
  PetscInt           n;

  PetscFunctionBegin;
  *bad   = PETSC_MAX_INT;
  *value = 0;
  PetscCall(VecGetLocalSize(v, &n));
  PetscCall(VecGetArrayRead(v, &a));
  for (PetscInt i = 0; i < n; i++)
    if (PetscIsInfOrNanScalar(a[i])) {
      *bad   = ds->map->rstart + i / bs;
      *value = PetscRealPart(a[i]);
      break;
    }
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, bad, 1, MPIU_INT, MPI_MIN, comm));
  PetscFunctionReturn(0);
}

/* A non-finite input or target is never data: an error naming the sample's index in the source. Collective. */
PetscErrorCode DatasetCheckFinite_Private(Dataset ds)
{
  MPI_Comm  comm = PetscObjectComm((PetscObject)ds);
  PetscInt  bad;
  PetscReal value;

  PetscFunctionBegin;
  PetscCall(DatasetFindNonFinite_Private(ds, ds->targets, ds->tsize, &bad, &value));
  PetscCheck(bad == PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED, "Sample %" PetscInt_FMT " (counting from 0) of %s has a target that is not a finite number: fix the data", bad, ds->tsource ? ds->tsource : "the dataset");
  PetscCall(DatasetFindNonFinite_Private(ds, ds->inputs, ds->F, &bad, &value));
  if (ds->xsource)
    PetscCheck(bad == PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED, "Sample %" PetscInt_FMT " (counting from 0) of %s has an input that is not a finite number: fix the data", bad, ds->xsource);
  else
    PetscCheck(bad == PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED, "Sample %" PetscInt_FMT " (counting from 0) of the %s dataset has an input that is not a finite number: fix the data", bad, ((PetscObject)ds)->type_name);
  PetscCall(VecMin(ds->inputs, NULL, &ds->xmin)); /* for the check of a normalisation against the data (TrainerPredict()) */
  PetscCall(VecMax(ds->inputs, NULL, &ds->xmax));
  PetscFunctionReturn(0);
}

/*
  The first sample (index in the source file, smallest over the ranks) whose target is not one integer label in
  [0, C) (C < 0: no upper bound), with its label; and the largest label with the first sample holding it. PETSC_MAX_INT
  when there is none. Collective; ds->tsize must be 1.
*/
static PetscErrorCode DatasetFindBadLabel_Private(Dataset ds, PetscInt C, PetscInt *bad, PetscReal *badvalue, PetscInt *maxlabel, PetscInt *maxsample)
{
  MPI_Comm           comm = PetscObjectComm((PetscObject)ds);
  const PetscScalar *t;
  PetscInt           n, lmax[2] = {-1, 0};
  PetscReal          value = PETSC_MIN_REAL;
  struct {
    PetscInt value, sample;
  } in, out;

  PetscFunctionBegin;
  *bad = PETSC_MAX_INT;
  PetscCall(VecGetLocalSize(ds->targets, &n));
  PetscCall(VecGetArrayRead(ds->targets, &t));
  for (PetscInt i = 0; i < n; i++) {
    PetscReal v = PetscRealPart(t[i]);

    if (!(v >= 0 && v == PetscFloorReal(v) && v < PETSC_MAX_INT && (C < 0 || v < C))) {
      if (*bad == PETSC_MAX_INT) {
        *bad  = ds->map->rstart + i;
        value = v;
      }
    } else if ((PetscInt)v > lmax[0]) {
      lmax[0] = (PetscInt)v;
      lmax[1] = ds->map->rstart + i;
    }
  }
  PetscCall(VecRestoreArrayRead(ds->targets, &t));
  /* the smallest bad sample, and its value from the rank that owns it */
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, bad, 1, MPIU_INT, MPI_MIN, comm));
  if (*bad == PETSC_MAX_INT || *bad < ds->map->rstart || *bad >= ds->map->rend) value = PETSC_MIN_REAL;
  PetscCall(MPIU_Allreduce(&value, badvalue, 1, MPIU_REAL, MPIU_MAX, comm));
  /* the largest label, first occurrence: MPI_MAXLOC on (label, -sample) */
  in.value  = lmax[0];
  in.sample = -lmax[1];
  PetscCallMPI(MPI_Allreduce(&in, &out, 1, MPIU_2INT, MPI_MAXLOC, comm));
  *maxlabel  = out.value;
  *maxsample = -out.sample;
  PetscFunctionReturn(0);
}

/* Why value is not a label of C classes, for error messages */
static const char *DatasetLabelProblem_Private(PetscReal v, PetscInt C)
{
  if (PetscIsInfOrNanReal(v)) return "not a number";
  if (v < 0) return "negative";
  if (v != PetscFloorReal(v)) return "not an integer";
  return C > 0 ? "too large" : "too large for a PetscInt";
}

/*
  DatasetFindClasses_Private - the number of classes: declared (labels checked to be integers in [0, C)), or inferred
  as 1 + the largest label when every target is a single non-negative integer, else 0 (regression). Errors name the
  labels' file and the sample's index in it.
*/
PetscErrorCode DatasetFindClasses_Private(Dataset ds)
{
  MPI_Comm  comm = PetscObjectComm((PetscObject)ds);
  PetscInt  C    = ds->nclassesset, bad, maxlabel, maxsample;
  PetscReal badvalue;

  PetscFunctionBegin;
  ds->nclasses = 0;
  if (C == 0) PetscFunctionReturn(0);
  PetscCheck(C < 0 || ds->tsize == 1, comm, PETSC_ERR_ARG_INCOMP, "%" PetscInt_FMT " classes were declared (-dataset_num_classes), but the targets of %s have %" PetscInt_FMT " entries per sample: class labels have one", C,
             ds->tsource ? ds->tsource : "the dataset", ds->tsize);
  if (ds->tsize != 1) PetscFunctionReturn(0);
  PetscCall(DatasetFindBadLabel_Private(ds, C, &bad, &badvalue, &maxlabel, &maxsample));
  if (C > 0) {
    PetscCheck(bad == PETSC_MAX_INT, comm, PETSC_ERR_FILE_UNEXPECTED, "Sample %" PetscInt_FMT " (counting from 0) of %s has label %.6g, which is not a class in [0, %" PetscInt_FMT ") (%s): fix the labels or -dataset_num_classes", bad,
               ds->tsource ? ds->tsource : "the dataset", (double)badvalue, C, DatasetLabelProblem_Private(badvalue, C));
    ds->nclasses = C;
  } else if (bad == PETSC_MAX_INT)
    ds->nclasses = maxlabel + 1;
  PetscFunctionReturn(0);
}

/*@
  DatasetCheckLabels - checks that every target of a Dataset is one class label of a classifier with nclasses outputs

  Collective on ds

  Input Parameters:
+ ds       - the Dataset, set up
- nclasses - the number of classes C the consumer (a Net's last layer under a cross-entropy loss) distinguishes

  Notes:
  Every target must be a single integer in [0, C). Otherwise the error names the labels' file, the first offending
  sample's index in it and its label, and says what to change: the labels, or the last layer's size when the labels
  really have more classes. The cross-entropy loss checks each batch too, but it can only name a sample's place in
  the batch.

  Level: intermediate

.seealso: `DatasetGetNumClasses()`, `DatasetSetNumClasses()`, `LOSSCROSSENTROPY`
@*/
PetscErrorCode DatasetCheckLabels(Dataset ds, PetscInt nclasses)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)ds);
  PetscInt    bad, maxlabel, maxsample;
  PetscReal   badvalue;
  const char *file;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(ds, DATASET_CLASSID, 1);
  PetscValidLogicalCollectiveInt(ds, nclasses, 2);
  PetscCheck(ds->setupcalled, comm, PETSC_ERR_ORDER, "Call DatasetSetUp() before DatasetCheckLabels()");
  PetscCheck(nclasses > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "The number of classes must be positive, not %" PetscInt_FMT, nclasses);
  file = ds->tsource ? ds->tsource : "the dataset";
  PetscCheck(ds->tsize == 1, comm, PETSC_ERR_ARG_INCOMP, "The targets of %s have %" PetscInt_FMT " entries per sample, but a classifier needs one class label per sample: use a regression loss (-loss_type mse) or give one label per sample", file,
             ds->tsize);
  PetscCall(DatasetFindBadLabel_Private(ds, nclasses, &bad, &badvalue, &maxlabel, &maxsample));
  if (bad == PETSC_MAX_INT) PetscFunctionReturn(0);
  if (badvalue >= nclasses && badvalue == PetscFloorReal(badvalue) && badvalue < PETSC_MAX_INT) {
    /* an integer label beyond the classes: either the labels are wrong or the Net is too small */
    PetscInt needed = PetscMax(maxlabel, (PetscInt)badvalue) + 1;

    SETERRQ(comm, PETSC_ERR_FILE_UNEXPECTED,
            "Sample %" PetscInt_FMT " (counting from 0) of %s has label %.6g, but the Net distinguishes %" PetscInt_FMT " classes, labels 0..%" PetscInt_FMT ": fix the labels; only if the data really has %" PetscInt_FMT
            " classes, make the last layer dense:%" PetscInt_FMT,
            bad, file, (double)badvalue, nclasses, nclasses - 1, needed, needed);
  }
  SETERRQ(comm, PETSC_ERR_FILE_UNEXPECTED, "Sample %" PetscInt_FMT " (counting from 0) of %s has label %.6g (%s), but class labels must be integers in [0, %" PetscInt_FMT "): fix the labels, or use a regression loss (-loss_type mse)", bad, file,
          (double)badvalue, DatasetLabelProblem_Private(badvalue, nclasses), nclasses);
}
