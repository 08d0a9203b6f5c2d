#include <errno.h>
#include "mesh.h"

/* The program reading the mesh (bin/mesh_surrogate, bin/mesh_hybrid, a test: they share this file), for messages */
static const char *MeshProgram(void)
{
  static char name[PETSC_MAX_PATH_LEN] = "";

  if (!name[0] && (PetscGetProgramName(name, sizeof(name)) || !name[0])) (void)PetscStrncpy(name, "this program", sizeof(name));
  return name;
}

/* The random series of sample s: a's and b's coefficients (K x K each) from seed s alone */
static PetscErrorCode SampleCoefficients(PetscInt K, PetscInt s, PetscReal ca[], PetscReal cb[])
{
  PetscRandom rnd;
  PetscReal   na = 0;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -PetscSqrtReal(3.0), PetscSqrtReal(3.0))); /* unit variance */
  PetscCall(PetscRandomSetSeed(rnd, (unsigned long)(1000003 * s + 17)));
  PetscCall(PetscRandomSeed(rnd));
  for (PetscInt p = 0; p < K; p++)
    for (PetscInt q = 0; q < K; q++) {
      PetscReal w = 1.0 / (1 + p * p + q * q), xi;

      PetscCall(PetscRandomGetValueReal(rnd, &xi));
      ca[p * K + q] = w * xi;
      PetscCall(PetscRandomGetValueReal(rnd, &xi));
      cb[p * K + q] = w * xi;
      na += w * w * ((p ? 0.5 : 1.0) * (q ? 0.5 : 1.0)); /* the mean square of w cos(p pi x) cos(q pi y) */
    }
  for (PetscInt i = 0; i < K * K; i++) {
    ca[i] /= PetscSqrtReal(na);
    cb[i] /= PetscSqrtReal(na);
  }
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

static PetscReal Series(PetscInt K, const PetscReal c[], PetscReal x, PetscReal y)
{
  PetscReal v = 0;

  for (PetscInt p = 0; p < K; p++)
    for (PetscInt q = 0; q < K; q++) v += c[p * K + q] * PetscCosReal(p * PETSC_PI * x) * PetscCosReal(q * PETSC_PI * y);
  return v;
}

/* P1 on the triangle (x0, x1, x2): Ke = k area grad phi_i . grad phi_j, returns the area */
static PetscReal ElementStiffness(const PetscScalar x[6], PetscReal k, PetscScalar Ke[9])
{
  const PetscReal det   = (x[2] - x[0]) * (x[5] - x[1]) - (x[4] - x[0]) * (x[3] - x[1]);
  const PetscReal gx[3] = {(x[3] - x[5]) / det, (x[5] - x[1]) / det, (x[1] - x[3]) / det};
  const PetscReal gy[3] = {(x[4] - x[2]) / det, (x[0] - x[4]) / det, (x[2] - x[0]) / det};
  const PetscReal area  = 0.5 * PetscAbsReal(det);

  for (PetscInt i = 0; i < 3; i++)
    for (PetscInt j = 0; j < 3; j++) Ke[i * 3 + j] = k * area * (gx[i] * gx[j] + gy[i] * gy[j]);
  return area;
}

/* Assemble K (and the load) for the series ca, cb; with G also the graph operator's pattern, every edge 1 */
static PetscErrorCode Assemble(MeshProblem *mp, const PetscReal ca[], const PetscReal cb[], Mat G)
{
  DM           cdm;
  Vec          coords;
  PetscSection csec;

  PetscFunctionBegin;
  PetscCall(DMGetCoordinateDM(mp->dm, &cdm));
  PetscCall(DMGetLocalSection(cdm, &csec));
  PetscCall(DMGetCoordinatesLocal(mp->dm, &coords));
  PetscCall(MatZeroEntries(mp->A));
  PetscCall(VecZeroEntries(mp->bl));
  for (PetscInt c = mp->cStart; c < mp->cEnd; c++) {
    PetscScalar *x    = NULL, Ke[9], fe[3], ones[9];
    PetscReal    kbar = 0, area;
    PetscInt     n;

    PetscCall(DMPlexVecGetClosure(cdm, csec, coords, c, &n, &x));
    PetscCheck(n == 6, PETSC_COMM_SELF, PETSC_ERR_SUP, "%s: a 2-D triangular mesh is needed, but cell %" PetscInt_FMT " has %" PetscInt_FMT " coordinates, not 6", mp->where, c, n);
    for (PetscInt i = 0; i < 3; i++) kbar += PetscExpReal(mp->sigma * Series(mp->K, ca, x[2 * i], x[2 * i + 1])) / 3;
    area = ElementStiffness(x, kbar, Ke);
    for (PetscInt i = 0; i < 3; i++) fe[i] = area / 3 * (1 + mp->famp * Series(mp->K, cb, x[2 * i], x[2 * i + 1]));
    PetscCall(DMPlexVecRestoreClosure(cdm, csec, coords, c, &n, &x));
    PetscCall(DMPlexMatSetClosure(mp->dm, NULL, NULL, mp->A, c, Ke, ADD_VALUES));
    PetscCall(DMPlexVecSetClosure(mp->dm, NULL, mp->bl, c, fe, ADD_VALUES));
    if (G) {
      for (PetscInt i = 0; i < 9; i++) ones[i] = 1;
      PetscCall(DMPlexMatSetClosure(mp->dm, NULL, NULL, G, c, ones, INSERT_VALUES));
    }
  }
  PetscCall(MatAssemblyBegin(mp->A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(mp->A, MAT_FINAL_ASSEMBLY));
  PetscCall(VecZeroEntries(mp->b));
  PetscCall(DMLocalToGlobal(mp->dm, mp->bl, ADD_VALUES, mp->b));
  PetscFunctionReturn(0);
}

/*
  An unstructured triangulation of the unit square on rank 0 (Debian's PETSc has no 2-D mesh generator, so no simplex
  DMPlexCreateBoxMesh()): an n x n grid of squares, each cut along a diagonal drawn at random, and the interior vertices
  moved at random by up to 0.3 h in each direction (seeded: the same mesh on every run). Vertex degrees range from 2 to 8.
*/
#define MESH_MAX_FACES 4096 /* 33.5 million triangles */

static PetscErrorCode CreateTriangulation(MPI_Comm comm, PetscInt n, DM *dm)
{
  PetscMPIInt rank;
  PetscInt    nv = 0, nc = 0, *cells = NULL;
  PetscReal  *xy = NULL;
  PetscRandom rnd;

  PetscFunctionBegin;
  /* rank 0 builds the whole triangulation before it is distributed: bound it (and its 3 x 2 n^2 cell entries) first */
  PetscCheck(n >= 2, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_faces %" PetscInt_FMT ": the triangulation needs at least 2 squares per side", n);
  PetscCheck(n <= MESH_MAX_FACES, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mesh_faces %" PetscInt_FMT ": at most %d squares per side are built (on one rank, before distribution); refine further with -dm_refine", n, MESH_MAX_FACES);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    const PetscReal h = 1.0 / n;

    nv = (n + 1) * (n + 1);
    nc = 2 * n * n;
    PetscCall(PetscMalloc2(3 * nc, &cells, 2 * nv, &xy));
    PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
    PetscCall(PetscRandomSetInterval(rnd, -0.3 * h, 0.3 * h));
    PetscCall(PetscRandomSetSeed(rnd, 12345));
    PetscCall(PetscRandomSeed(rnd));
    for (PetscInt j = 0; j <= n; j++)
      for (PetscInt i = 0; i <= n; i++) {
        PetscReal dx, dy;

        PetscCall(PetscRandomGetValueReal(rnd, &dx));
        PetscCall(PetscRandomGetValueReal(rnd, &dy));
        xy[2 * (j * (n + 1) + i)]     = i * h + (i > 0 && i < n ? dx : 0);
        xy[2 * (j * (n + 1) + i) + 1] = j * h + (j > 0 && j < n ? dy : 0);
      }
    for (PetscInt j = 0; j < n; j++)
      for (PetscInt i = 0; i < n; i++) {
        const PetscInt v00 = j * (n + 1) + i, v10 = v00 + 1, v01 = v00 + n + 1, v11 = v01 + 1, c = 2 * (j * n + i);
        PetscReal      r;

        PetscCall(PetscRandomGetValueReal(rnd, &r));
        if (r > 0) { /* diagonal v00 - v11; counterclockwise triangles */
          PetscInt t[6] = {v00, v10, v11, v00, v11, v01};
          PetscCall(PetscArraycpy(cells + 3 * c, t, 6));
        } else { /* diagonal v10 - v01 */
          PetscInt t[6] = {v00, v10, v01, v10, v11, v01};
          PetscCall(PetscArraycpy(cells + 3 * c, t, 6));
        }
      }
    PetscCall(PetscRandomDestroy(&rnd));
  }
  PetscCall(DMPlexCreateFromCellListPetsc(comm, 2, nc, nv, 3, PETSC_TRUE, cells, 2, xy, dm));
  PetscCall(PetscFree2(cells, xy));
  PetscFunctionReturn(0);
}

/*
  A Gmsh file (-mesh_file) is checked on rank 0 before PETSc's reader sees it, so that a missing, truncated or foreign
  file stops every rank with a message naming it, and so that its sizes are bounded before anything is allocated from
  them (PETSc's reader trusts the counts it reads). Accepted: ASCII .msh of version 2.2 or 4.1 whose elements are
  points, lines and 3-node triangles in the plane z = 0 (what `gmsh -2` writes for a planar surface). The scan reads
  every line once: a few ms for the shipped meshes.
*/
#define MESH_MAX_FILE_VERTICES (1 << 24)

typedef struct {
  FILE       *fp;
  const char *file;
  long long   line;    /* the number of the line in buf */
  PetscBool   partial; /* buf is a last line cut short (no end of line) */
  char        buf[4096];
  char       *msg; /* the first complaint; empty while the file is fine */
  size_t      len;
} MshScan;

/* The next line into s->buf without its end of line; PETSC_FALSE at the end of the file (or of a line too long) */
static PetscBool MshNextLine(MshScan *s)
{
  size_t n;

  if (!fgets(s->buf, sizeof(s->buf), s->fp)) return PETSC_FALSE;
  s->line++;
  n = strlen(s->buf);
  if (n == sizeof(s->buf) - 1 && s->buf[n - 1] != '\n') return PETSC_FALSE; /* longer than any line of a mesh we read */
  s->partial = (PetscBool)(n && s->buf[n - 1] != '\n');
  while (n && (s->buf[n - 1] == '\n' || s->buf[n - 1] == '\r')) s->buf[--n] = 0;
  return PETSC_TRUE;
}

/* Reads the next line, which must exist inside section sec; complains (truncated file) and returns PETSC_FALSE if not */
static PetscBool MshExpectLine(MshScan *s, const char sec[])
{
  if (MshNextLine(s)) return PETSC_TRUE;
  if (!*s->msg) PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(s->msg, s->len, "-mesh_file %s ends (or has an overlong line) at line %lld, inside its %s section: the file is truncated or corrupt; write it again with Gmsh", s->file, s->line, sec));
  return PETSC_FALSE;
}

static PetscBool MshComplain(MshScan *, const char[]);

/* A count from the file above the bound read here: say both */
static PetscBool MshComplainCount(MshScan *s, const char what[], long long n, long long max)
{
  char msg[256];

  PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(msg, sizeof(msg), "the file announces %lld %s, more than the at most %lld read here (on one rank, before distribution): use a coarser mesh and -dm_refine", n, what, max));
  return MshComplain(s, msg);
}

static PetscBool MshComplain(MshScan *s, const char what[])
{
  if (*s->msg) return PETSC_FALSE;
  if (s->partial)
    PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(s->msg, s->len, "-mesh_file %s ends in the middle of line %lld: the file is truncated; write it again with Gmsh", s->file, s->line));
  else
    PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(s->msg, s->len, "-mesh_file %s, line %lld: %s", s->file, s->line, what));
  return PETSC_FALSE;
}

/* Reads n integers (long long) from str; PETSC_FALSE if there are fewer or anything else follows when exact */
static PetscBool MshReadInts(const char *str, PetscInt n, long long v[], PetscBool exact)
{
  char *end;

  for (PetscInt i = 0; i < n; i++) {
    v[i] = strtoll(str, &end, 10);
    if (end == str) return PETSC_FALSE;
    str = end;
  }
  if (exact) {
    while (*str == ' ' || *str == '\t') str++;
    if (*str) return PETSC_FALSE;
  }
  return PETSC_TRUE;
}

/* The nodes of Gmsh element type t, 0 for the types no program here reads (and their names, for the message) */
static PetscInt MshElementNodes(long long t, const char **name)
{
  switch (t) {
  case 15:
    *name = "1-node point";
    return 1;
  case 1:
    *name = "2-node line";
    return 2;
  case 2:
    *name = "3-node triangle";
    return 3;
  case 3:
    *name = "4-node quadrangle";
    return 0;
  case 4:
    *name = "4-node tetrahedron";
    return 0;
  case 5:
    *name = "8-node hexahedron";
    return 0;
  case 6:
    *name = "6-node prism";
    return 0;
  case 7:
    *name = "5-node pyramid";
    return 0;
  case 8:
    *name = "3-node second-order line";
    return 0;
  case 9:
    *name = "6-node second-order triangle";
    return 0;
  default:
    *name = "an element type not listed here";
    return 0;
  }
}

static PetscBool MshCheckElementType(MshScan *s, long long t)
{
  const char *name;
  char        what[512];

  if (MshElementNodes(t, &name)) return PETSC_TRUE;
  PetscCallAbort(
      PETSC_COMM_SELF,
      PetscSNPrintf(what, sizeof(what),
                    "Gmsh element type %lld (%s): bin/mesh_surrogate and bin/mesh_hybrid need a 2-D mesh of 3-node triangles (with points and lines on its boundary only); mesh the surface with triangles (no Recombine, Mesh.ElementOrder 1)", t,
                    name));
  return MshComplain(s, what);
}

/* A node line's coordinates: three finite numbers with z = 0 */
static PetscBool MshCheckCoordinates(MshScan *s, const char *str)
{
  double c[3];
  char  *end;

  for (PetscInt d = 0; d < 3; d++) {
    c[d] = strtod(str, &end);
    if (end == str || PetscIsInfOrNanReal(c[d])) return MshComplain(s, "a node needs three finite coordinates x y z: the file is corrupt");
    str = end;
  }
  if (c[2] != 0) return MshComplain(s, "a node has z != 0: the mesh must be a 2-D mesh in the plane z = 0");
  return PETSC_TRUE;
}

/* $Nodes and $Elements of version 4.1 (the line $Nodes or $Elements has just been read) */
static PetscBool MshScanNodes41(MshScan *s, long long *nv, long long *minTag, long long *maxTag)
{
  long long h[4], b[4], seen = 0;

  if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
  if (!MshReadInts(s->buf, 4, h, PETSC_TRUE) || h[0] < 0 || h[1] < 0 || h[2] > h[3]) return MshComplain(s, "expected the $Nodes header 'numEntityBlocks numNodes minNodeTag maxNodeTag': the file is corrupt");
  *nv     = h[1];
  *minTag = h[2];
  *maxTag = h[3];
  if (h[1] > MESH_MAX_FILE_VERTICES) return MshComplainCount(s, "nodes", h[1], MESH_MAX_FILE_VERTICES);
  for (long long blk = 0; blk < h[0]; blk++) {
    if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
    if (!MshReadInts(s->buf, 4, b, PETSC_TRUE) || b[3] < 0 || b[3] > h[1] - seen)
      return MshComplain(s, "expected a node block header 'entityDim entityTag parametric numNodesInBlock' with at most the nodes the $Nodes header announced: the file is corrupt");
    if (b[2]) return MshComplain(s, "parametric nodes are not read here: save the mesh without Mesh.SaveParametric");
    for (long long i = 0; i < b[3]; i++) {
      long long tag;

      if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
      if (!MshReadInts(s->buf, 1, &tag, PETSC_TRUE) || tag < h[2] || tag > h[3]) return MshComplain(s, "expected a node tag between the header's minNodeTag and maxNodeTag: the file is corrupt");
    }
    for (long long i = 0; i < b[3]; i++) {
      if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
      if (!MshCheckCoordinates(s, s->buf)) return PETSC_FALSE;
    }
    seen += b[3];
  }
  if (seen != h[1]) return MshComplain(s, "the node blocks hold fewer nodes than the $Nodes header announced: the file is corrupt");
  if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
  if (strcmp(s->buf, "$EndNodes")) return MshComplain(s, "expected $EndNodes after the announced nodes: the file is corrupt");
  return PETSC_TRUE;
}

static PetscBool MshScanElements41(MshScan *s, long long minTag, long long maxTag, long long *nc)
{
  long long h[4], b[4], seen = 0, v[1 + 3];

  if (!MshExpectLine(s, "$Elements")) return PETSC_FALSE;
  if (!MshReadInts(s->buf, 4, h, PETSC_TRUE) || h[0] < 0 || h[1] < 0) return MshComplain(s, "expected the $Elements header 'numEntityBlocks numElements minElementTag maxElementTag': the file is corrupt");
  if (h[1] > 4 * (long long)MESH_MAX_FILE_VERTICES) return MshComplainCount(s, "elements", h[1], 4 * (long long)MESH_MAX_FILE_VERTICES);
  for (long long blk = 0; blk < h[0]; blk++) {
    const char *name;
    PetscInt    nn;

    if (!MshExpectLine(s, "$Elements")) return PETSC_FALSE;
    if (!MshReadInts(s->buf, 4, b, PETSC_TRUE) || b[3] < 0 || b[3] > h[1] - seen)
      return MshComplain(s, "expected an element block header 'entityDim entityTag elementType numElementsInBlock' with at most the elements the $Elements header announced: the file is corrupt");
    if (!MshCheckElementType(s, b[2])) return PETSC_FALSE;
    nn = MshElementNodes(b[2], &name);
    for (long long i = 0; i < b[3]; i++) {
      if (!MshExpectLine(s, "$Elements")) return PETSC_FALSE;
      if (!MshReadInts(s->buf, 1 + nn, v, PETSC_TRUE)) return MshComplain(s, "expected an element line 'elementTag nodeTag ...' with the nodes of its type: the file is corrupt");
      for (PetscInt k = 1; k <= nn; k++)
        if (v[k] < minTag || v[k] > maxTag) return MshComplain(s, "an element names a node tag outside the $Nodes header's range: the file is corrupt");
    }
    if (b[2] == 2) *nc += b[3];
    seen += b[3];
  }
  if (seen != h[1]) return MshComplain(s, "the element blocks hold fewer elements than the $Elements header announced: the file is corrupt");
  if (!MshExpectLine(s, "$Elements")) return PETSC_FALSE;
  if (strcmp(s->buf, "$EndElements")) return MshComplain(s, "expected $EndElements after the announced elements: the file is corrupt");
  return PETSC_TRUE;
}

/* $Nodes and $Elements of version 2.2: 'tag x y z' and 'tag type ntags tags... nodes...' */
static PetscBool MshScanNodes22(MshScan *s, long long *nv, long long *maxTag)
{
  long long n, tag;
  char     *end;

  if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
  if (!MshReadInts(s->buf, 1, &n, PETSC_TRUE) || n < 0) return MshComplain(s, "expected the number of nodes after $Nodes: the file is corrupt");
  if (n > MESH_MAX_FILE_VERTICES) return MshComplainCount(s, "nodes", n, MESH_MAX_FILE_VERTICES);
  *nv     = n;
  *maxTag = 0;
  for (long long i = 0; i < n; i++) {
    if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
    tag = strtoll(s->buf, &end, 10);
    if (end == s->buf || tag < 1) return MshComplain(s, "expected a node line 'tag x y z' with a positive tag: the file is corrupt");
    if (!MshCheckCoordinates(s, end)) return PETSC_FALSE;
    *maxTag = PetscMax(*maxTag, tag);
  }
  if (!MshExpectLine(s, "$Nodes")) return PETSC_FALSE;
  if (strcmp(s->buf, "$EndNodes")) return MshComplain(s, "expected $EndNodes after the announced nodes: the file is corrupt");
  return PETSC_TRUE;
}

static PetscBool MshScanElements22(MshScan *s, long long maxTag, long long *nc)
{
  long long n, v[3 + 64 + 3];

  if (!MshExpectLine(s, "$Elements")) return PETSC_FALSE;
  if (!MshReadInts(s->buf, 1, &n, PETSC_TRUE) || n < 0) return MshComplain(s, "expected the number of elements after $Elements: the file is corrupt");
  if (n > 4 * (long long)MESH_MAX_FILE_VERTICES) return MshComplainCount(s, "elements", n, 4 * (long long)MESH_MAX_FILE_VERTICES);
  for (long long i = 0; i < n; i++) {
    const char *name;
    PetscInt    nn;

    if (!MshExpectLine(s, "$Elements")) return PETSC_FALSE;
    if (!MshReadInts(s->buf, 3, v, PETSC_FALSE) || v[2] < 0 || v[2] > 64) return MshComplain(s, "expected an element line 'tag type ntags tags... nodes...': the file is corrupt");
    if (!MshCheckElementType(s, v[1])) return PETSC_FALSE;
    nn = MshElementNodes(v[1], &name);
    if (!MshReadInts(s->buf, 3 + v[2] + nn, v, PETSC_TRUE)) return MshComplain(s, "expected an element line 'tag type ntags tags... nodes...' with the nodes of its type: the file is corrupt");
    for (PetscInt k = 0; k < nn; k++)
      if (v[3 + v[2] + k] < 1 || v[3 + v[2] + k] > maxTag) return MshComplain(s, "an element names a node tag that no node has: the file is corrupt");
    if (v[1] == 2) (*nc)++;
  }
  if (!MshExpectLine(s, "$Elements")) return PETSC_FALSE;
  if (strcmp(s->buf, "$EndElements")) return MshComplain(s, "expected $EndElements after the announced elements: the file is corrupt");
  return PETSC_TRUE;
}

/* Rank 0: the whole file; msg empty if it is fine */
static void MshScanFile(MshScan *s, long long *nv, long long *nc)
{
  PetscBool v41 = PETSC_FALSE, nodes = PETSC_FALSE, elements = PETSC_FALSE;
  long long minTag = 0, maxTag = 0;
  char      version[64] = "";
  int       ftype = -1, dsize = 0;

  *nv = *nc = 0;
  s->fp     = fopen(s->file, "r");
  if (!s->fp) {
    PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(s->msg, s->len, "-mesh_file %s: cannot open it (%s): give the path of a Gmsh .msh file, e.g. share/meshes/lshape.msh", s->file, strerror(errno)));
    return;
  }
  if (!MshNextLine(s) || strcmp(s->buf, "$MeshFormat")) {
    PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(s->msg, s->len, "-mesh_file %s is not a Gmsh mesh: its first line is not $MeshFormat; give an ASCII .msh written by Gmsh (gmsh -2 -format msh41 domain.geo), e.g. share/meshes/lshape.msh", s->file));
    goto done;
  }
  if (!MshNextLine(s) || sscanf(s->buf, "%63s %d %d", version, &ftype, &dsize) != 3) {
    MshComplain(s, "expected 'version file-type data-size' after $MeshFormat: the file is truncated or corrupt");
    goto done;
  }
  if (strcmp(version, "2.2") && strcmp(version, "4.1")) {
    MshComplain(s, "Gmsh format versions 2.2 and 4.1 are read here: save the mesh as ASCII msh41 (gmsh -format msh41) or msh22");
    goto done;
  }
  if (ftype != 0) {
    MshComplain(s, "a binary .msh: save the mesh as ASCII (gmsh -format msh41, without -bin)");
    goto done;
  }
  if (!MshNextLine(s) || strcmp(s->buf, "$EndMeshFormat")) {
    MshComplain(s, "expected $EndMeshFormat: the file is truncated or corrupt");
    goto done;
  }
  v41 = (PetscBool)!strcmp(version, "4.1");
  /* the sections: $Nodes and $Elements are checked, any other skipped to its $End line */
  while (MshNextLine(s)) {
    char sec[256], endsec[260];

    if (s->buf[0] != '$') {
      MshComplain(s, "expected the start of a section ($Name): the file is corrupt");
      goto done;
    }
    PetscCallAbort(PETSC_COMM_SELF, PetscStrncpy(sec, s->buf, sizeof(sec)));
    if (!strcmp(sec, "$Nodes")) {
      if (nodes || !(v41 ? MshScanNodes41(s, nv, &minTag, &maxTag) : MshScanNodes22(s, nv, &maxTag))) {
        if (nodes) MshComplain(s, "a second $Nodes section: the file is corrupt");
        goto done;
      }
      nodes = PETSC_TRUE;
    } else if (!strcmp(sec, "$Elements")) {
      if (!nodes) {
        MshComplain(s, "$Elements before $Nodes: the file is corrupt");
        goto done;
      }
      if (elements || !(v41 ? MshScanElements41(s, minTag, maxTag, nc) : MshScanElements22(s, maxTag, nc))) {
        if (elements) MshComplain(s, "a second $Elements section: the file is corrupt");
        goto done;
      }
      elements = PETSC_TRUE;
    } else {
      PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(endsec, sizeof(endsec), "$End%s", sec + 1));
      do {
        if (!MshExpectLine(s, sec)) goto done;
      } while (strcmp(s->buf, endsec));
    }
  }
  if (!nodes || !elements) {
    PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(s->msg, s->len, "-mesh_file %s has no %s section (it ends at line %lld): the file is truncated or not a mesh; write it again with Gmsh", s->file, nodes ? "$Elements" : "$Nodes", s->line));
  } else if (*nc < 1 || *nv < 3) {
    PetscCallAbort(PETSC_COMM_SELF, PetscSNPrintf(s->msg, s->len, "-mesh_file %s has %lld nodes and %lld triangles: a 2-D triangular mesh is needed (gmsh -2)", s->file, *nv, *nc));
  }
done:
  fclose(s->fp);
}

/* The triangulation in a Gmsh file: checked on rank 0 (MshScanFile), then read by PETSc on rank 0 */
/* "(x, y)" in up to 6 digits (PETSc's printf writes 1 as "1.") */
static const char *MeshPoint(char buf[64], PetscReal x, PetscReal y)
{
  (void)snprintf(buf, 64, "(%.6g, %.6g)", (double)x, (double)y);
  return buf;
}

/* Vertices sorted by their coordinates (x, then y), for the search of coincident ones */
static const PetscReal *sortxy;
static int              CompareVertices(const void *a, const void *b)
{
  const PetscReal *p = sortxy + 2 * *(const PetscInt *)a, *q = sortxy + 2 * *(const PetscInt *)b;

  return p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : p[1] < q[1] ? -1 : p[1] > q[1] ? 1 : 0;
}

/*
  The geometry of a mesh just read (on rank 0, before distribution; the other ranks hold nothing): a triangle of zero
  area (its three nodes on a line), two nodes at one point, or a node in no triangle makes the stiffness singular, and
  the solver (KSP, TS) failed without saying why. Each is refused by name, with its place in the file's coordinates;
  "zero" is relative to the mesh's extent (1e-12 of its diameter).
*/
static PetscErrorCode CheckGeometry(MPI_Comm comm, const char file[], DM dm)
{
  DM                 cdm;
  PetscSection       csec;
  Vec                coords;
  const PetscScalar *x;
  PetscInt           cStart, cEnd, vStart, vEnd, nv, *order;
  PetscReal         *xy, lo[2] = {PETSC_MAX_REAL, PETSC_MAX_REAL}, hi[2] = {PETSC_MIN_REAL, PETSC_MIN_REAL}, tol, diam;
  char               msg[PETSC_MAX_PATH_LEN + 512] = "", p0[64], p1[64], p2[64];

  PetscFunctionBegin;
  PetscCall(DMPlexGetHeightStratum(dm, 0, &cStart, &cEnd));
  PetscCall(DMPlexGetDepthStratum(dm, 0, &vStart, &vEnd));
  PetscCall(DMGetCoordinateDM(dm, &cdm));
  PetscCall(DMGetLocalSection(cdm, &csec));
  PetscCall(DMGetCoordinatesLocal(dm, &coords));
  nv = vEnd - vStart;
  PetscCall(PetscMalloc2(2 * nv, &xy, nv, &order));
  PetscCall(VecGetArrayRead(coords, &x));
  for (PetscInt v = vStart; v < vEnd; v++) {
    PetscInt off;

    PetscCall(PetscSectionGetOffset(csec, v, &off));
    for (PetscInt d = 0; d < 2; d++) {
      xy[2 * (v - vStart) + d] = PetscRealPart(x[off + d]);
      lo[d]                    = PetscMin(lo[d], xy[2 * (v - vStart) + d]);
      hi[d]                    = PetscMax(hi[d], xy[2 * (v - vStart) + d]);
    }
    order[v - vStart] = v - vStart;
  }
  PetscCall(VecRestoreArrayRead(coords, &x));
  diam = nv ? PetscSqrtReal(PetscSqr(hi[0] - lo[0]) + PetscSqr(hi[1] - lo[1])) : 0;
  tol  = 1e-12 * diam;
  for (PetscInt v = vStart; v < vEnd && !msg[0]; v++) {
    PetscInt support;

    PetscCall(DMPlexGetSupportSize(dm, v, &support));
    if (!support)
      PetscCall(PetscSNPrintf(msg, sizeof(msg), "%s: -mesh_file %s: the node at %s belongs to no triangle (its row of the stiffness would be zero): remove it, or mesh again with Gmsh", MeshProgram(), file,
                              MeshPoint(p0, xy[2 * (v - vStart)], xy[2 * (v - vStart) + 1])));
  }
  sortxy = xy;
  qsort(order, (size_t)nv, sizeof(PetscInt), CompareVertices);
  for (PetscInt i = 1; i < nv && !msg[0]; i++) {
    const PetscReal *p = xy + 2 * order[i - 1], *q = xy + 2 * order[i];

    if (PetscAbsReal(p[0] - q[0]) <= tol && PetscAbsReal(p[1] - q[1]) <= tol)
      PetscCall(PetscSNPrintf(msg, sizeof(msg), "%s: -mesh_file %s: two nodes lie at the same point %s (coincident nodes: the mesh is not conforming there, its stiffness singular); merge them (Gmsh: Coherence, or Geometry.Tolerance), or mesh again",
                              MeshProgram(), file, MeshPoint(p0, p[0], p[1])));
  }
  for (PetscInt c = cStart; c < cEnd && !msg[0]; c++) {
    PetscScalar *cx = NULL;
    PetscInt     n;
    PetscReal    det;

    PetscCall(DMPlexVecGetClosure(cdm, csec, coords, c, &n, &cx));
    det = n == 6 ? PetscRealPart((cx[2] - cx[0]) * (cx[5] - cx[1]) - (cx[4] - cx[0]) * (cx[3] - cx[1])) : 1;
    if (PetscAbsReal(det) <= tol * diam) /* twice the area, against 1e-12 diam^2 */
      PetscCall(PetscSNPrintf(msg, sizeof(msg), "%s: -mesh_file %s: a triangle has zero area (a degenerate triangle, its nodes %s, %s, %s on one line): remove it, or mesh again with Gmsh", MeshProgram(), file,
                              MeshPoint(p0, PetscRealPart(cx[0]), PetscRealPart(cx[1])), MeshPoint(p1, PetscRealPart(cx[2]), PetscRealPart(cx[3])), MeshPoint(p2, PetscRealPart(cx[4]), PetscRealPart(cx[5]))));
    PetscCall(DMPlexVecRestoreClosure(cdm, csec, coords, c, &n, &cx));
  }
  PetscCall(PetscFree2(xy, order));
  { /* one verdict: the rank that found something (rank 0, which holds the mesh) tells every rank */
    PetscMPIInt rank, from = -1, found;

    PetscCallMPI(MPI_Comm_rank(comm, &rank));
    found = msg[0] ? rank : -1;
    PetscCallMPI(MPI_Allreduce(&found, &from, 1, MPI_INT, MPI_MAX, comm));
    if (from >= 0) PetscCallMPI(MPI_Bcast(msg, sizeof(msg), MPI_CHAR, from, comm));
  }
  PetscCheck(!msg[0], comm, PETSC_ERR_FILE_UNEXPECTED, "%s", msg);
  PetscFunctionReturn(0);
}

static PetscErrorCode CreateFromGmsh(MPI_Comm comm, const char file[], DM *dm)
{
  PetscMPIInt    rank;
  char           msg[PETSC_MAX_PATH_LEN + 1024] = "";
  long long      counts[2]                      = {0, 0};
  PetscInt       dim, cStart, cEnd, nontri = 0;
  DMPolytopeType bad = DM_POLYTOPE_TRIANGLE;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  if (rank == 0) {
    MshScan s;

    PetscCall(PetscMemzero(&s, sizeof(s)));
    s.file = file;
    s.msg  = msg;
    s.len  = sizeof(msg);
    MshScanFile(&s, &counts[0], &counts[1]);
  }
  PetscCallMPI(MPI_Bcast(msg, sizeof(msg), MPI_CHAR, 0, comm));
  PetscCheck(!msg[0], comm, PETSC_ERR_FILE_UNEXPECTED, "%s: %s", MeshProgram(), msg);
  PetscCall(DMPlexCreateGmshFromFile(comm, file, PETSC_TRUE, dm));
  PetscCall(DMGetDimension(*dm, &dim));
  PetscCheck(dim == 2, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: -mesh_file %s: PETSc read a mesh of dimension %" PetscInt_FMT ", not 2", MeshProgram(), file, dim);
  PetscCall(DMPlexGetHeightStratum(*dm, 0, &cStart, &cEnd));
  for (PetscInt c = cStart; c < cEnd; c++) { /* the scan let only triangles through: PETSc must agree (all ranks stop together) */
    DMPolytopeType ct;

    PetscCall(DMPlexGetCellType(*dm, c, &ct));
    if (ct != DM_POLYTOPE_TRIANGLE) {
      nontri++;
      bad = ct;
    }
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &nontri, 1, MPIU_INT, MPI_SUM, comm));
  PetscCheck(!nontri, comm, PETSC_ERR_FILE_UNEXPECTED, "%s: -mesh_file %s: PETSc read %" PetscInt_FMT " cells that are not triangles (one a %s on rank 0)", MeshProgram(), file, nontri, DMPolytopeTypes[bad]);
  PetscCall(CheckGeometry(comm, file, *dm));
  PetscFunctionReturn(0);
}

/*
  The mesh (from -mesh_file, or the triangulation above; distributed by PETSc's partitioner, -petscpartitioner_type,
  then -dm_refine and the other -dm_ options), one dof per vertex, the boundary vertices (DMPlexMarkBoundaryFaces() on
  the undistributed mesh, label "mesh_boundary"), the stiffness pattern, the graph operator and the KSP (prefix -solve_;
  default cg with BoomerAMG, relative tolerance 1e-12 so that the data agree across rank counts to round-off)
*/
PetscErrorCode MeshProblemCreate(MPI_Comm comm, const char file[], PetscInt faces, PetscInt K, PetscReal sigma, PetscReal famp, MeshProblem *mp)
{
  DM               dmdist;
  DMLabel          bndlabel;
  PetscPartitioner part;
  PetscSection     sec, gsec;
  PetscInt         pStart, pEnd, nb = 0;
  Vec              d;
  PetscReal       *ca, *cb;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(mp, sizeof(*mp)));
  mp->K        = K;
  mp->sigma    = sigma;
  mp->famp     = famp;
  mp->fromfile = (PetscBool)(file && file[0]);
  if (mp->fromfile)
    PetscCall(PetscSNPrintf(mp->where, sizeof(mp->where), "%s -mesh_file %s", MeshProgram(), file));
  else
    PetscCall(PetscSNPrintf(mp->where, sizeof(mp->where), "%s, the built-in mesh (-mesh_faces %" PetscInt_FMT ")", MeshProgram(), faces));
  if (mp->fromfile)
    PetscCall(CreateFromGmsh(comm, file, &mp->dm));
  else
    PetscCall(CreateTriangulation(comm, faces, &mp->dm));
  PetscCall(DMCreateLabel(mp->dm, "mesh_boundary"));
  PetscCall(DMGetLabel(mp->dm, "mesh_boundary", &bndlabel));
  PetscCall(DMPlexMarkBoundaryFaces(mp->dm, 1, bndlabel));
  PetscCall(DMPlexLabelComplete(mp->dm, bndlabel));
  PetscCall(DMPlexGetPartitioner(mp->dm, &part));
  PetscCall(PetscPartitionerSetFromOptions(part));
  PetscCall(DMPlexDistribute(mp->dm, 0, NULL, &dmdist));
  if (dmdist) {
    PetscCall(DMDestroy(&mp->dm));
    mp->dm = dmdist;
  }
  PetscCall(DMSetFromOptions(mp->dm));
  PetscCall(DMViewFromOptions(mp->dm, NULL, "-mesh_dm_view"));
  PetscCall(DMPlexGetDepthStratum(mp->dm, 0, &mp->vStart, &mp->vEnd));
  PetscCall(DMPlexGetHeightStratum(mp->dm, 0, &mp->cStart, &mp->cEnd));
  mp->ncells = mp->cEnd - mp->cStart;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &mp->ncells, 1, MPIU_INT, MPI_SUM, comm));

  /* One dof per vertex; the global section numbers the owned vertices */
  PetscCall(DMPlexGetChart(mp->dm, &pStart, &pEnd));
  PetscCall(PetscSectionCreate(comm, &sec));
  PetscCall(PetscSectionSetChart(sec, pStart, pEnd));
  for (PetscInt v = mp->vStart; v < mp->vEnd; v++) PetscCall(PetscSectionSetDof(sec, v, 1));
  PetscCall(PetscSectionSetUp(sec));
  PetscCall(DMSetLocalSection(mp->dm, sec));
  PetscCall(PetscSectionDestroy(&sec));
  PetscCall(DMGetGlobalSection(mp->dm, &gsec));
  PetscCall(DMCreateGlobalVector(mp->dm, &mp->b));
  PetscCall(DMCreateLocalVector(mp->dm, &mp->bl));
  PetscCall(VecDuplicate(mp->b, &mp->u));
  PetscCall(VecGetLocalSize(mp->b, &mp->m));
  PetscCall(VecGetSize(mp->b, &mp->N));
  PetscCall(VecGetOwnershipRange(mp->b, &mp->rstart, NULL));

  /* The owned vertices: their rows, coordinates, and which lie on the boundary */
  {
    DM                 cdm;
    PetscSection       csec;
    Vec                coords;
    const PetscScalar *x;
    PetscInt           cdim;

    PetscCall(DMGetCoordinateDim(mp->dm, &cdim));
    PetscCheck(cdim == 2, comm, PETSC_ERR_SUP, "%s: the mesh has %" PetscInt_FMT " coordinates per vertex, but a 2-D mesh (x, y) is needed", mp->where, cdim);
    PetscCall(DMGetLabel(mp->dm, "mesh_boundary", &bndlabel));
    PetscCall(DMGetCoordinateDM(mp->dm, &cdm));
    PetscCall(DMGetLocalSection(cdm, &csec));
    PetscCall(DMGetCoordinatesLocal(mp->dm, &coords));
    PetscCall(VecGetArrayRead(coords, &x));
    PetscCall(PetscMalloc3(2 * mp->m, &mp->xy, mp->m, &mp->bnd, mp->m, &mp->onbnd));
    for (PetscInt v = mp->vStart; v < mp->vEnd; v++) {
      PetscInt g, off, val;

      PetscCall(PetscSectionGetOffset(gsec, v, &g));
      if (g < 0) continue; /* a ghost */
      PetscCall(PetscSectionGetOffset(csec, v, &off));
      PetscCall(DMLabelGetValue(bndlabel, v, &val));
      mp->xy[2 * (g - mp->rstart)]     = PetscRealPart(x[off]);
      mp->xy[2 * (g - mp->rstart) + 1] = PetscRealPart(x[off + 1]);
      mp->onbnd[g - mp->rstart]        = (PetscBool)(val == 1);
    }
    PetscCall(VecRestoreArrayRead(coords, &x));
    for (PetscInt i = 0; i < mp->m; i++)
      if (mp->onbnd[i]) mp->bnd[nb++] = mp->rstart + i;
    mp->nbnd = nb;
  }

  /* The stiffness pattern (vertices sharing a triangle) and G on it, assembled once with k = 1 */
  PetscCall(DMCreateMatrix(mp->dm, &mp->A));
  PetscCall(MatSetOption(mp->A, MAT_KEEP_NONZERO_PATTERN, PETSC_TRUE));
  PetscCall(MatDuplicate(mp->A, MAT_DO_NOT_COPY_VALUES, &mp->G));
  PetscCall(PetscCalloc2(K * K, &ca, K * K, &cb));
  PetscCall(Assemble(mp, ca, cb, mp->G));
  PetscCall(PetscFree2(ca, cb));
  PetscCall(MatAssemblyBegin(mp->G, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(mp->G, MAT_FINAL_ASSEMBLY));
  PetscCall(VecDuplicate(mp->b, &d));
  PetscCall(MatGetRowSum(mp->G, d));
  PetscCall(VecSqrtAbs(d));
  PetscCall(VecReciprocal(d));
  PetscCall(MatDiagonalScale(mp->G, d, d));
  PetscCall(VecDestroy(&d));

  PetscCall(KSPCreate(comm, &mp->ksp));
  PetscCall(KSPSetOptionsPrefix(mp->ksp, "solve_"));
  PetscCall(KSPSetType(mp->ksp, KSPCG));
  PetscCall(KSPSetTolerances(mp->ksp, 1e-12, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT));
  {
    PC pc;

    PetscCall(KSPGetPC(mp->ksp, &pc));
    PetscCall(PCSetType(pc, PCHYPRE));
  }
  PetscCall(KSPSetFromOptions(mp->ksp));
  PetscFunctionReturn(0);
}

/*
  Sample s: assemble, impose u = 0 on the boundary (the rows and columns of the boundary vertices become the identity's,
  the load there 0), solve. Gives the owned vertices' log k, f and u in row order (any may be NULL).
*/
PetscErrorCode MeshProblemSolve(MeshProblem *mp, PetscInt s, PetscScalar logk[], PetscScalar f[], PetscScalar u[])
{
  PetscReal         *ca, *cb;
  KSPConvergedReason reason;

  PetscFunctionBegin;
  PetscCall(PetscMalloc2(mp->K * mp->K, &ca, mp->K * mp->K, &cb));
  PetscCall(SampleCoefficients(mp->K, s, ca, cb));
  for (PetscInt i = 0; i < mp->m; i++) {
    if (logk) logk[i] = mp->sigma * Series(mp->K, ca, mp->xy[2 * i], mp->xy[2 * i + 1]);
    if (f) f[i] = 1 + mp->famp * Series(mp->K, cb, mp->xy[2 * i], mp->xy[2 * i + 1]);
  }
  if (u) {
    const PetscScalar *a;

    PetscCall(Assemble(mp, ca, cb, NULL));
    PetscCall(VecZeroEntries(mp->u));
    PetscCall(MatZeroRowsColumns(mp->A, mp->nbnd, mp->bnd, 1.0, mp->u, mp->b));
    PetscCall(KSPSetOperators(mp->ksp, mp->A, mp->A));
    PetscCall(KSPSolve(mp->ksp, mp->b, mp->u));
    PetscCall(KSPGetConvergedReason(mp->ksp, &reason));
    PetscCheck(reason > 0, PetscObjectComm((PetscObject)mp->ksp), PETSC_ERR_NOT_CONVERGED, "%s: the solve of sample %" PetscInt_FMT " did not converge (%s): change -solve_ksp_type or -solve_pc_type", mp->where, s, KSPConvergedReasons[reason]);
    PetscCall(VecGetArrayRead(mp->u, &a));
    PetscCall(PetscArraycpy(u, a, mp->m));
    PetscCall(VecRestoreArrayRead(mp->u, &a));
  }
  PetscCall(PetscFree2(ca, cb));
  PetscFunctionReturn(0);
}

/*
  w[m]: a weight on the owned vertices, positive inside and zero on the boundary, of order 1, for an ansatz u = w v that
  meets the boundary condition whatever v. The built-in unit square: sin(pi x) sin(pi y). A mesh from a file: the
  torsion function (-lap w = 1, w = 0 on the boundary, the P1 solve with k = 1 and f = 1) divided by its maximum; it
  vanishes on any boundary and has the solutions' own singularity at re-entrant corners (r^(2/3) at an L's).
*/
PetscErrorCode MeshProblemBoundaryWeight(MeshProblem *mp, PetscScalar w[])
{
  PetscReal         *ca, *cb, wmax;
  const PetscScalar *a;
  KSPConvergedReason reason;

  PetscFunctionBegin;
  if (!mp->fromfile) {
    for (PetscInt i = 0; i < mp->m; i++) w[i] = PetscSinReal(PETSC_PI * mp->xy[2 * i]) * PetscSinReal(PETSC_PI * mp->xy[2 * i + 1]);
    PetscFunctionReturn(0);
  }
  PetscCall(PetscCalloc2(mp->K * mp->K, &ca, mp->K * mp->K, &cb)); /* zero series: k = exp(0) = 1, f = 1 */
  PetscCall(Assemble(mp, ca, cb, NULL));
  PetscCall(PetscFree2(ca, cb));
  PetscCall(VecZeroEntries(mp->u));
  PetscCall(MatZeroRowsColumns(mp->A, mp->nbnd, mp->bnd, 1.0, mp->u, mp->b));
  PetscCall(KSPSetOperators(mp->ksp, mp->A, mp->A));
  PetscCall(KSPSolve(mp->ksp, mp->b, mp->u));
  PetscCall(KSPGetConvergedReason(mp->ksp, &reason));
  PetscCheck(reason > 0, PetscObjectComm((PetscObject)mp->ksp), PETSC_ERR_NOT_CONVERGED, "%s: the solve of the boundary weight (-lap w = 1) did not converge (%s): change -solve_ksp_type or -solve_pc_type", mp->where, KSPConvergedReasons[reason]);
  PetscCall(VecMax(mp->u, NULL, &wmax));
  PetscCheck(wmax > 0, PetscObjectComm((PetscObject)mp->ksp), PETSC_ERR_PLIB, "The boundary weight has maximum %g: every vertex of the mesh lies on its boundary", (double)wmax);
  PetscCall(VecGetArrayRead(mp->u, &a));
  for (PetscInt i = 0; i < mp->m; i++) w[i] = a[i] / wmax;
  PetscCall(VecRestoreArrayRead(mp->u, &a));
  PetscFunctionReturn(0);
}

PetscErrorCode MeshProblemDestroy(MeshProblem *mp)
{
  PetscFunctionBegin;
  PetscCall(KSPDestroy(&mp->ksp));
  PetscCall(MatDestroy(&mp->A));
  PetscCall(MatDestroy(&mp->G));
  PetscCall(VecDestroy(&mp->b));
  PetscCall(VecDestroy(&mp->bl));
  PetscCall(VecDestroy(&mp->u));
  PetscCall(PetscFree3(mp->xy, mp->bnd, mp->onbnd));
  PetscCall(DMDestroy(&mp->dm));
  PetscFunctionReturn(0);
}

/*
  S copies of G side by side (the block diagonal I_S (x) G), laid out so that a rank's rows are its m rows of G for
  sample 0, then for sample 1, ...: row (s, i) of a rank whose G rows start at r0 is S r0 + s m + i. A Net's batch of
  S samples' nodes, [s][i][channel] on each rank, is then one full batch on this operator.
*/
PetscErrorCode MeshStackOperator(Mat G, PetscInt S, Mat *GS)
{
  const PetscInt *ranges;
  PetscInt        rs, re, m, *dnz, *onz;
  MPI_Comm        comm;

  PetscFunctionBegin;
  PetscCall(PetscObjectGetComm((PetscObject)G, &comm));
  PetscCall(MatGetOwnershipRanges(G, &ranges));
  PetscCall(MatGetOwnershipRange(G, &rs, &re));
  m = re - rs;
  PetscCall(PetscMalloc2(S * m, &dnz, S * m, &onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt *cols;
    PetscInt        nc, nd = 0;

    PetscCall(MatGetRow(G, i, &nc, &cols, NULL));
    for (PetscInt k = 0; k < nc; k++) nd += cols[k] >= rs && cols[k] < re;
    for (PetscInt s = 0; s < S; s++) {
      dnz[s * m + i - rs] = nd;
      onz[s * m + i - rs] = nc - nd;
    }
    PetscCall(MatRestoreRow(G, i, &nc, &cols, NULL));
  }
  PetscCall(MatCreateAIJ(comm, S * m, S * m, PETSC_DETERMINE, PETSC_DETERMINE, 0, dnz, 0, onz, GS));
  PetscCall(PetscFree2(dnz, onz));
  for (PetscInt i = rs; i < re; i++) {
    const PetscInt    *cols;
    const PetscScalar *vals;
    PetscInt           nc, *scols;

    PetscCall(MatGetRow(G, i, &nc, &cols, &vals));
    PetscCall(PetscMalloc1(nc, &scols));
    for (PetscInt s = 0; s < S; s++) {
      PetscInt row = S * rs + s * m + i - rs;

      for (PetscInt k = 0; k < nc; k++) {
        PetscInt r = 0;

        while (cols[k] >= ranges[r + 1]) r++; /* the column's owner */
        scols[k] = S * ranges[r] + s * (ranges[r + 1] - ranges[r]) + cols[k] - ranges[r];
      }
      PetscCall(MatSetValues(*GS, 1, &row, nc, scols, vals, INSERT_VALUES));
    }
    PetscCall(PetscFree(scols));
    PetscCall(MatRestoreRow(G, i, &nc, &cols, &vals));
  }
  PetscCall(MatAssemblyBegin(*GS, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*GS, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}
