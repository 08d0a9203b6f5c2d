/*
  einsum:SPEC - a contraction of one or two inputs named by letters, as torch.einsum on the dims after the batch dim
  (the batch dim is implicit and never written). One input in a layer list (einsum(tij->tji), einsum(ij->i)); two as a
  join of -net_graph, like add and concat (name = einsum:bqd,bkd->bqk <- q, k). No parameters.

  SPEC is "A->C" or "A,B->C": each operand names its input's dims, one letter (a-z, A-Z) each, slowest first; C names
  the output's dims. A letter has one size wherever it appears; a letter of C must appear in an operand; letters absent
  from C are summed. The output is explicit: without "->" (numpy's implicit mode, the output's letters sorted) the spec
  is refused, since a silent reordering of dims is worse than a line more to write. Not supported: a letter repeated
  within one operand (a diagonal), "..." (an ellipsis), three or more operands.

  One input (linear):  y = E(x)                 e.g. tij->tji (a permutation), ij->i (a sum over j)
    forward   y  = E x        backward  dx = E^T dy  (dy broadcast back over the summed letters, the dims permuted
    back)     jvp  dy = E dx  sobackward zero
  Two inputs (bilinear): C[c] = sum over the letters not in C of A[a] B[b], written C = A.B; its transposes:
    backward  dA[a] = sum over the letters not in A of dC[c] B[b]   = einsum(C, B -> A) of (dC, B)
              dB[b] = sum over the letters not in B of dC[c] A[a]   = einsum(C, A -> B) of (dC, A)
      (<dC, A.B> = sum over all letters of dC A B: grouping the sum by A's letters gives <A, dC.B>, and by B's <B, dC.A>)
    jvp       dC = dA.B + A.dB                                     (the product rule: C is bilinear)
    sobackward along (Adot, Bdot), dC fixed: backward's dA = dC.B moves only through B, dB = dC.A only through A:
              dAdot += einsum(C, B -> A) of (dC, Bdot),   dBdot += einsum(C, A -> B) of (dC, Adot)
  Each of the three contractions (forward, the two cotangents) has a plan made at set-up (einsum.h): a (batched) GEMM
  through LayerGemmBatched() where it is one, the operands permuted to the canonical form first when they are not in it,
  or a direct loop; -<prefix>einsum_path gemm|loop|auto chooses (auto: GEMM where the product has at least 64
  multiply-adds per group). Float kernels (single, bfloat16) for one input and for two (forwardnsingle, backwardnsingle,
  jvpnsingle): the same plans in float, their GEMMs through LayerGemmBatchedSingle() on the layer's backend (with
  -net_backend onednn one oneDNN matmul for all (sample, batch index) groups of a contraction; sgemm on native). The
  second-order term (sobackwardn) is double only.
*/
#include "einsum.h"

typedef enum { EINSUM_CHOOSE_AUTO, EINSUM_CHOOSE_GEMM, EINSUM_CHOOSE_LOOP } EinsumChoice;
static const char *const EinsumChoices[] = {"auto", "gemm", "loop", "EinsumChoice", "EINSUM_CHOOSE_", NULL};

typedef struct {
  char              spec[128];                 /* as written, blanks removed */
  PetscInt          nops;                      /* 1 or 2 operands (0: no spec yet) */
  char              op[2][PETNET_MAX_DIM + 1]; /* the operands' letters */
  char              out[PETNET_MAX_DIM + 1];   /* the output's letters (may be empty: one number per sample) */
  EinsumChoice      choice;                    /* -einsum_path */
  EinsumContraction fwd, bwd[2];               /* y = fwd(x0, x1); dx0 = bwd[0](dy, x1); dx1 = bwd[1](dy, x0) */
  PetscInt64        work;                      /* scratch entries per sample the largest plan needs */
  void             *wbuf;                      /* the passes' scratch, nwbuf bytes, grown to the largest batch (not a
                                                  malloc a call), freed with the layer */
  size_t nwbuf;
} Layer_Einsum;

static PetscBool EinsumIsLetter(char c)
{
  return (PetscBool)((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
}

/* the position of letter l in s, or -1 */
static PetscInt EinsumFind(const char s[], char l)
{
  const char *p = s ? strchr(s, l) : NULL;

  return l && p ? (PetscInt)(p - s) : -1;
}

/* one operand or the output, letters [b, e) of the spec: checked and copied into dst; node names the layer */
static PetscErrorCode EinsumParseTerm(Layer layer, const char node[], const char *b, const char *e, const char *what, PetscBool empty, char dst[])
{
  MPI_Comm comm = PetscObjectComm((PetscObject)layer);
  PetscInt len  = (PetscInt)(e - b);

  PetscFunctionBegin;
  PetscCheck(len > 0 || empty, comm, PETSC_ERR_ARG_WRONG, "The %s is malformed: %s is empty; name each of its input's dims with a letter, e.g. einsum:ij->ji", node, what);
  PetscCheck(len <= PETNET_MAX_DIM, comm, PETSC_ERR_ARG_WRONG, "The %s: %s has %" PetscInt_FMT " letters, but a sample has at most %d dims", node, what, len, PETNET_MAX_DIM);
  for (PetscInt i = 0; i < len; i++) {
    PetscCheck(b[i] != '.', comm, PETSC_ERR_SUP, "The %s: an ellipsis (...) is not supported: name every dim of %s with a letter", node, what);
    PetscCheck(EinsumIsLetter(b[i]), comm, PETSC_ERR_ARG_WRONG, "The %s is malformed: '%c' in %s is not a letter; name the dims with a-z and A-Z, e.g. einsum:bqd,bkd->bqk", node, b[i], what);
    for (PetscInt j = 0; j < i; j++)
      PetscCheck(b[j] != b[i], comm, PETSC_ERR_ARG_WRONG, "The %s: letter '%c' appears twice in %s; each letter of a term names a different dim (diagonals such as ii->i are not supported): give the dims different letters", node, b[i], what);
    dst[i] = b[i];
  }
  dst[len] = 0;
  PetscFunctionReturn(0);
}

/* A->C or A,B->C, read at set-up (where the node has its name for messages) */
static PetscErrorCode EinsumParse(Layer layer, const char node[])
{
  Layer_Einsum *es   = (Layer_Einsum *)layer->data;
  MPI_Comm      comm = PetscObjectComm((PetscObject)layer);
  const char   *spec = es->spec;
  const char   *arrow, *comma;
  size_t        k = strlen(spec);

  PetscFunctionBegin;
  es->nops = 0;
  arrow    = strstr(spec, "->");
  PetscCheck(arrow, comm, PETSC_ERR_ARG_WRONG, "The %s is malformed: no \"->\". Write the output's letters explicitly, e.g. einsum:ij->ji or einsum:bqd,bkd->bqk (numpy's implicit mode, the output's letters in alphabetical order, is not supported)",
             node);
  PetscCheck(!strstr(arrow + 2, "->"), comm, PETSC_ERR_ARG_WRONG, "The %s is malformed: \"->\" appears twice; write operands->output, e.g. einsum:ij->ji", node);
  comma = strchr(spec, ',');
  PetscCheck(!comma || comma < arrow, comm, PETSC_ERR_ARG_WRONG, "The %s is malformed: the output (after \"->\") is one term, without commas", node);
  PetscCheck(!comma || !strchr(comma + 1, ',') || strchr(comma + 1, ',') > arrow, comm, PETSC_ERR_SUP,
             "The %s has more than two operands: einsum takes one input (einsum:ij->ji) or two (a join in -net_graph, einsum:bqd,bkd->bqk); chain two einsum nodes for more", node);
  PetscCall(EinsumParseTerm(layer, node, spec, comma ? comma : arrow, "operand 1", PETSC_FALSE, es->op[0]));
  if (comma)
    PetscCall(EinsumParseTerm(layer, node, comma + 1, arrow, "operand 2", PETSC_FALSE, es->op[1]));
  else
    es->op[1][0] = 0;
  PetscCall(EinsumParseTerm(layer, node, arrow + 2, spec + k, "the output", PETSC_TRUE, es->out));
  for (const char *c = es->out; *c; c++)
    PetscCheck(EinsumFind(es->op[0], *c) >= 0 || EinsumFind(es->op[1], *c) >= 0, comm, PETSC_ERR_ARG_WRONG,
               "The %s: letter '%c' of the output names no dim of %s: every output letter must appear in an operand (a letter absent from the output is summed)", node, *c, comma ? "either operand" : "the operand");
  es->nops = comma ? 2 : 1;
  PetscFunctionReturn(0);
}

/* keeps the spec (blanks removed); EinsumParse() reads it at set-up */
static PetscErrorCode LayerSetArguments_Einsum(Layer layer, const char args[])
{
  Layer_Einsum *es = (Layer_Einsum *)layer->data;

  PetscFunctionBegin;
  PetscCall(LayerCopyArgumentsWithoutBlanks_Private(layer, args, sizeof(es->spec), es->spec, "a spec names at most " PetscStringize(PETNET_MAX_DIM) " dims per term"));
  es->nops = 0;
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerGetArguments_Einsum(Layer layer, size_t len, char args[])
{
  Layer_Einsum *es = (Layer_Einsum *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscStrncpy(args, es->spec, len));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerSetFromOptions_Einsum(Layer layer, PetscOptionItems *PetscOptionsObject)
{
  Layer_Einsum *es = (Layer_Einsum *)layer->data;
  char          value[128];
  PetscEnum     choice = (PetscEnum)es->choice;
  PetscBool     set;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, "Einsum: a contraction of one or two inputs");
  PetscCall(PetscStrncpy(value, es->spec, sizeof(value)));
  PetscCall(PetscOptionsString("-einsum_spec", "The contraction, e.g. tij->tji or bqd,bkd->bqk (the batch dim implicit)", "LayerSetArguments", value, value, sizeof(value), &set));
  if (set) PetscCall(LayerSetArguments_Einsum(layer, value));
  PetscCall(PetscOptionsEnum("-einsum_path", "How contractions run: auto, gemm (a batched GEMM wherever the contraction is one), loop (direct loops)", "LayerSetArguments", EinsumChoices, choice, &choice, &set));
  if (set) es->choice = (EinsumChoice)choice;
  PetscOptionsHeadEnd();
  PetscFunctionReturn(0);
}

/* the stride of letter l in term s (its dims row-major), 0 if absent */
static PetscInt EinsumStride(const char s[], const PetscInt lsize[], char l)
{
  PetscInt pos = EinsumFind(s, l), stride = 1;

  if (pos < 0) return 0;
  for (const char *c = s + pos + 1; *c; c++) stride *= lsize[(unsigned char)*c];
  return stride;
}

static PetscInt EinsumTermSize(const char s[], const PetscInt lsize[])
{
  PetscInt size = 1;

  for (const char *c = s; s && *c; c++) size *= lsize[(unsigned char)*c];
  return size;
}

/* The plan of out = contraction of p (and q, or NULL) (einsum.h), from the letters and the sizes lsize[letter] alone */
static void EinsumPlan(const char p[], const char q[], const char o[], const PetscInt lsize[], EinsumChoice choice, EinsumContraction *c)
{
  char      letters[EINSUM_MAX_LETTERS + 1], batch[EINSUM_MAX_LETTERS + 1] = "", free1[EINSUM_MAX_LETTERS + 1] = "", free2[EINSUM_MAX_LETTERS + 1] = "", contr[EINSUM_MAX_LETTERS + 1] = "";
  char      c1[EINSUM_MAX_LETTERS + 1], c2[EINSUM_MAX_LETTERS + 1], co[EINSUM_MAX_LETTERS + 1];
  PetscInt  nl       = 0;
  PetscBool gemmable = (PetscBool)(q != NULL);

  memset(c, 0, sizeof(*c));
  /* the letters: the output's first (in its order), then the others of p and q */
  for (const char *s = o; *s; s++) letters[nl++] = *s;
  for (const char *s = p; *s; s++)
    if (EinsumFind(o, *s) < 0) letters[nl++] = *s;
  for (const char *s = q; s && *s; s++)
    if (EinsumFind(o, *s) < 0 && EinsumFind(p, *s) < 0) letters[nl++] = *s;
  letters[nl] = 0;
  c->nl       = nl;
  c->nout     = (PetscInt)strlen(o);
  for (PetscInt l = 0; l < nl; l++) {
    c->len[l] = lsize[(unsigned char)letters[l]];
    c->s1[l]  = EinsumStride(p, lsize, letters[l]);
    c->s2[l]  = q ? EinsumStride(q, lsize, letters[l]) : 0;
    c->so[l]  = EinsumStride(o, lsize, letters[l]);
  }
  c->size1 = EinsumTermSize(p, lsize);
  c->size2 = q ? EinsumTermSize(q, lsize) : 0;
  c->sizeo = EinsumTermSize(o, lsize);
  c->path  = EINSUM_LOOP;
  c->r1    = (PetscInt)strlen(p);
  for (PetscInt d = 0; d < c->r1; d++) c->d1[d] = lsize[(unsigned char)p[d]];
  if (!q) { /* one operand: a permutation when it has the output's letters, else a loop (sums, broadcasts) */
    if (c->r1 == c->nout && c->r1 > 0) {
      for (PetscInt d = 0; d < c->nout; d++) c->p1[d] = EinsumFind(p, o[d]);
      c->path = EINSUM_PERMUTE;
    }
    return;
  }
  /* two operands: classify each letter by the terms it lies in */
  for (PetscInt l = 0; l < nl; l++) {
    const char      L   = letters[l];
    const PetscBool in1 = (PetscBool)(EinsumFind(p, L) >= 0), in2 = (PetscBool)(EinsumFind(q, L) >= 0), ino = (PetscBool)(EinsumFind(o, L) >= 0);
    char           *cls = in1 && in2 && ino ? batch : in1 && ino ? free1 : in2 && ino ? free2 : in1 && in2 ? contr : NULL;
    size_t          len;

    if (!cls) {
      gemmable = PETSC_FALSE; /* a letter of one term only: summed away or broadcast, no GEMM */
      continue;
    }
    len          = strlen(cls);
    cls[len]     = L;
    cls[len + 1] = 0;
  }
  if (!gemmable || choice == EINSUM_CHOOSE_LOOP) return;
  c->nb = EinsumTermSize(batch, lsize);
  c->ni = EinsumTermSize(free1, lsize);
  c->nj = EinsumTermSize(free2, lsize);
  c->nk = EinsumTermSize(contr, lsize);
  if (choice == EINSUM_CHOOSE_AUTO && (PetscInt64)c->ni * c->nj * c->nk < 64) return; /* an elementwise product or a tiny one: the loop */
  c->path = EINSUM_GEMM;
  /* canonical forms: op1' (batch, free1, contr), op2' (batch, free2, contr), out' (batch, free1, free2) */
  snprintf(c1, sizeof(c1), "%s%s%s", batch, free1, contr);
  snprintf(c2, sizeof(c2), "%s%s%s", batch, free2, contr);
  snprintf(co, sizeof(co), "%s%s%s", batch, free1, free2);
  c->r2 = (PetscInt)strlen(q);
  c->ro = (PetscInt)strlen(o);
  for (PetscInt d = 0; d < c->r1; d++) c->p1[d] = EinsumFind(p, c1[d]);
  for (PetscInt d = 0; d < c->r2; d++) {
    c->d2[d] = lsize[(unsigned char)q[d]];
    c->p2[d] = EinsumFind(q, c2[d]);
  }
  for (PetscInt d = 0; d < c->ro; d++) {
    c->dco[d] = lsize[(unsigned char)co[d]];
    c->po[d]  = EinsumFind(co, o[d]);
  }
  c->id1 = LayerPermuteIsIdentity(c->r1, c->p1);
  c->id2 = LayerPermuteIsIdentity(c->r2, c->p2);
  c->ido = LayerPermuteIsIdentity(c->ro, c->po);
}

/* the operands against the inputs: their count, each one's dims, one size per letter; then the output and the plans */
static PetscErrorCode LayerSetUp_Einsum(Layer layer)
{
  Layer_Einsum *es         = (Layer_Einsum *)layer->data;
  MPI_Comm      comm       = PetscObjectComm((PetscObject)layer);
  PetscInt      lsize[128] = {0}, lfrom[128] = {0};
  char          node[512], shape[2][64];

  PetscFunctionBegin;
  PetscCall(LayerShapeKindDescription(layer, es->spec, "spec", sizeof(node), node));
  if (es->spec[0]) PetscCall(EinsumParse(layer, node));
  PetscCheck(es->nops > 0, comm, PETSC_ERR_ARG_WRONG, "The %s has no spec: write einsum:A->C for one input (e.g. einsum(tij->tji) in -net_layers) or einsum:A,B->C for a join of two (a -net_graph node: c = einsum:bqd,bkd->bqk <- q, k)", node);
  PetscCheck(es->nops == layer->nin, comm, PETSC_ERR_ARG_SIZ, "The %s has %" PetscInt_FMT " operand%s but the node has %" PetscInt_FMT " input%s: %s", node, es->nops, es->nops > 1 ? "s" : "", layer->nin, layer->nin > 1 ? "s" : "",
             es->nops == 2 ? "a two-operand einsum is a join, written as a node of -net_graph with two inputs, e.g. c = einsum:bqd,bkd->bqk <- q, k" : "write one operand per input, e.g. einsum:bqd,bkd->bqk for two");
  for (PetscInt k = 0; k < es->nops; k++) {
    const PetNetShape *in = &layer->ins[k];
    const PetscInt     r  = (PetscInt)strlen(es->op[k]);

    PetscCall(PetNetShapeToString(in, sizeof(shape[k]), shape[k]));
    PetscCheck(r == in->ndim, comm, PETSC_ERR_ARG_SIZ, "The %s: operand %" PetscInt_FMT " \"%s\" names %" PetscInt_FMT " dims, but input %" PetscInt_FMT " has shape %s (%" PetscInt_FMT " dims, the batch dim not counted): write one letter per dim",
               node, k + 1, es->op[k], r, k + 1, shape[k], in->ndim);
    for (PetscInt d = 0; d < r; d++) {
      const unsigned char L = (unsigned char)es->op[k][d];

      PetscCheck(!lsize[L] || lsize[L] == in->dim[d], comm, PETSC_ERR_ARG_SIZ,
                 "The %s: letter '%c' is %" PetscInt_FMT " in operand %" PetscInt_FMT " (input shape %s) but %" PetscInt_FMT " in operand %" PetscInt_FMT " (input shape %s); a letter has one size: fix the spec or the inputs' shapes", node, L,
                 lsize[L], lfrom[L] + 1, shape[lfrom[L]], in->dim[d], k + 1, shape[k]);
      lsize[L] = in->dim[d];
      lfrom[L] = k;
    }
  }
  layer->out.ndim = (PetscInt)strlen(es->out);
  for (PetscInt d = 0; d < layer->out.ndim; d++) layer->out.dim[d] = lsize[(unsigned char)es->out[d]];
  if (!layer->out.ndim) { /* one number per sample */
    layer->out.ndim   = 1;
    layer->out.dim[0] = 1;
  }
  {
    PetscInt64 size = 1;

    for (PetscInt d = 0; d < layer->out.ndim; d++) size *= layer->out.dim[d];
    PetscCheck(size <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "The %s's output has %" PetscInt64_FMT " entries per sample, more than %d, the largest PetscInt", node, size, PETSC_MAX_INT);
  }
  if (es->nops == 1) {
    EinsumPlan(es->op[0], NULL, es->out, lsize, es->choice, &es->fwd);
    EinsumPlan(es->out, NULL, es->op[0], lsize, es->choice, &es->bwd[0]);
  } else {
    EinsumPlan(es->op[0], es->op[1], es->out, lsize, es->choice, &es->fwd);
    EinsumPlan(es->out, es->op[1], es->op[0], lsize, es->choice, &es->bwd[0]);
    EinsumPlan(es->out, es->op[0], es->op[1], lsize, es->choice, &es->bwd[1]);
  }
  es->work      = PetscMax(EinsumWorkSize(&es->fwd, 1), PetscMax(EinsumWorkSize(&es->bwd[0], 1), es->nops == 2 ? EinsumWorkSize(&es->bwd[1], 1) : 0));
  layer->sozero = (PetscBool)(es->nops == 1); /* one input: linear; two: bilinear, a curvature term */
  PetscFunctionReturn(0);
}

/* scratch for the contractions of n samples (type size esize): the layer's buffer, grown when a batch needs more */
static PetscErrorCode EinsumGetWork(Layer layer, PetscInt n, size_t esize, void **work)
{
  Layer_Einsum *es    = (Layer_Einsum *)layer->data;
  const size_t  bytes = (size_t)es->work * (size_t)n * esize;

  PetscFunctionBegin;
  *work = NULL;
  if (!bytes) PetscFunctionReturn(0);
  if (bytes > es->nwbuf) {
    PetscCall(PetscFree(es->wbuf));
    PetscCall(PetscMalloc(bytes, &es->wbuf));
    es->nwbuf = bytes;
  }
  *work = es->wbuf;
  PetscFunctionReturn(0);
}

/* ---- forward, backward, jvp on nin = nops inputs, in double and in float (single, bfloat16) from one text
   (einsumpasses.h): the float passes run their GEMMs on the layer's backend (layer->gemm, set by its Net: oneDNN's
   matmul, one batched primitive for a contraction's groups, or sgemm), the double ones on BLAS ---- */

#define EIN_T          PetscScalar
#define EIN_PASS(p)    Layer##p##N_Einsum
#define EIN_CONTRACT   EinsumContract
#define EIN_BACKEND(l) PETNET_GEMM_NATIVE
#include "einsumpasses.h"
#undef EIN_T
#undef EIN_PASS
#undef EIN_CONTRACT
#undef EIN_BACKEND
#define EIN_T          float
#define EIN_PASS(p)    Layer##p##NSingle_Einsum
#define EIN_CONTRACT   EinsumContractSingle
#define EIN_BACKEND(l) ((l)->gemm)
#include "einsumpasses.h"
#undef EIN_T
#undef EIN_PASS
#undef EIN_CONTRACT
#undef EIN_BACKEND

/* the curvature term of the bilinear join (derived above): dxdot0 += bwd[0](dy, xdot1), dxdot1 += bwd[1](dy, xdot0) */
static PetscErrorCode LayerSOBackwardN_Einsum(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *const x[], const PetscScalar *y, const PetscScalar *const xdot[], const PetscScalar *thetadot, const PetscScalar *ydot,
                                              const PetscScalar *dy, PetscScalar *const dxdot[], PetscScalar *dthetadot)
{
  Layer_Einsum *es = (Layer_Einsum *)layer->data;
  void         *work;

  PetscFunctionBegin;
  if (es->nops == 1) PetscFunctionReturn(0);
  PetscCall(EinsumGetWork(layer, n, sizeof(PetscScalar), &work));
  if (dxdot[0] && xdot[1]) PetscCall(EinsumContract(&es->bwd[0], PETNET_GEMM_NATIVE, n, dy, xdot[1], PETSC_TRUE, dxdot[0], (PetscScalar *)work));
  if (dxdot[1] && xdot[0]) PetscCall(EinsumContract(&es->bwd[1], PETNET_GEMM_NATIVE, n, dy, xdot[0], PETSC_TRUE, dxdot[1], (PetscScalar *)work));
  PetscFunctionReturn(0);
}

/* the single-input entries (LayerForwardArray() and the others) are the same passes */
static PetscErrorCode LayerForward_Einsum(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, PetscScalar *y)
{
  const PetscScalar *xs[2] = {x, NULL};

  PetscFunctionBegin;
  PetscCall(LayerForwardN_Einsum(layer, n, theta, xs, y));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerBackward_Einsum(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dy, PetscScalar *dx, PetscScalar *dtheta)
{
  const PetscScalar *xs[2]  = {x, NULL};
  PetscScalar       *dxs[2] = {dx, NULL};

  PetscFunctionBegin;
  PetscCall(LayerBackwardN_Einsum(layer, n, theta, xs, y, dy, dxs, dtheta));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerJVP_Einsum(Layer layer, PetscInt n, const PetscScalar *theta, const PetscScalar *x, const PetscScalar *y, const PetscScalar *dx, const PetscScalar *dtheta, PetscScalar *dy)
{
  const PetscScalar *xs[2] = {x, NULL}, *dxs[2] = {dx, NULL};

  PetscFunctionBegin;
  PetscCall(LayerJVPN_Einsum(layer, n, theta, xs, y, dxs, dtheta, dy));
  PetscFunctionReturn(0);
}

static const char *EinsumPathName(const EinsumContraction *c)
{
  return c->path == EINSUM_GEMM ? "GEMM" : c->path == EINSUM_PERMUTE ? "permutation" : "loop";
}

static PetscErrorCode LayerView_Einsum(Layer layer, PetscViewer viewer)
{
  Layer_Einsum *es = (Layer_Einsum *)layer->data;

  PetscFunctionBegin;
  PetscCall(PetscViewerASCIIPrintf(viewer, "%s: forward %s", es->spec, EinsumPathName(&es->fwd)));
  if (es->fwd.path == EINSUM_GEMM)
    PetscCall(PetscViewerASCIIPrintf(viewer, " (%" PetscInt_FMT " x %" PetscInt_FMT " by %" PetscInt_FMT " x %" PetscInt_FMT ", %" PetscInt_FMT " per sample)", es->fwd.ni, es->fwd.nk, es->fwd.nk, es->fwd.nj, es->fwd.nb));
  PetscCall(PetscViewerASCIIPrintf(viewer, ", backward %s", EinsumPathName(&es->bwd[0])));
  if (es->nops == 2) PetscCall(PetscViewerASCIIPrintf(viewer, " and %s", EinsumPathName(&es->bwd[1])));
  PetscCall(PetscViewerASCIIPrintf(viewer, "\n"));
  PetscFunctionReturn(0);
}

static PetscErrorCode LayerDestroy_Einsum(Layer layer)
{
  PetscFunctionBegin;
  PetscCall(PetscFree(((Layer_Einsum *)layer->data)->wbuf));
  PetscCall(PetscFree(layer->data));
  PetscFunctionReturn(0);
}

PETSC_INTERN PetscErrorCode LayerCreate_Einsum(Layer layer)
{
  Layer_Einsum *es;

  PetscFunctionBegin;
  PetscCall(PetscNew(&es));
  layer->data                 = es;
  layer->mininputs            = 1;
  layer->maxinputs            = 2;
  layer->ops->setarguments    = LayerSetArguments_Einsum;
  layer->ops->getarguments    = LayerGetArguments_Einsum;
  layer->ops->setfromoptions  = LayerSetFromOptions_Einsum;
  layer->ops->setup           = LayerSetUp_Einsum;
  layer->ops->forward         = LayerForward_Einsum;
  layer->ops->backward        = LayerBackward_Einsum;
  layer->ops->jvp             = LayerJVP_Einsum;
  layer->ops->forwardn        = LayerForwardN_Einsum;
  layer->ops->backwardn       = LayerBackwardN_Einsum;
  layer->ops->jvpn            = LayerJVPN_Einsum;
  layer->ops->sobackwardn     = LayerSOBackwardN_Einsum;
  layer->ops->forwardnsingle  = LayerForwardNSingle_Einsum; /* one or two inputs (layersingle.c) */
  layer->ops->backwardnsingle = LayerBackwardNSingle_Einsum;
  layer->ops->jvpnsingle      = LayerJVPNSingle_Einsum;
  layer->ops->view            = LayerView_Einsum;
  layer->ops->destroy         = LayerDestroy_Einsum;
  layer->gradfree             = PETSC_TRUE;
  layer->actonly              = PETSC_TRUE; /* reads nothing of a forward pass but its arrays */
  PetscFunctionReturn(0);
}
