static const char help[] = "A character-level GPT on the text of the Debian package fortunes (issue 32): reports validation bits per character.\n"
                           "  corpus     -charlm_corpus DIR|FILE (default /usr/share/games/fortunes): the text files of DIR in sorted order (not the\n"
                           "             .dat/.u8 index files, not symlinks), every 10th (the 10th, 20th, ...) held out for validation (the last\n"
                           "             file when DIR has fewer than 10); a single FILE: its last tenth is the validation text\n"
                           "  vocabulary the bytes of the train text in increasing order as ids 1..V-1; id 0 stands for a byte the train text lacks\n"
                           "  model      embedding:V:E, position:P, L x transformer:H:4E:causal, layernorm, dense:V:tokens (-net_layers replaces it)\n"
                           "  -charlm_model auto|gpt|gpt_nope|gpt_rope|mlp  gpt_nope: no position table; gpt_rope: no position table, rotary positions\n"
                           "                        in attention (transformer:H:4E:causal:rotary); mlp: a per-position stand-in (no attention); auto:\n"
                           "                        the first of gpt, gpt_nope, mlp whose layer kinds this PetNet has (default)\n"
                           "  -charlm_context T     tokens per window (default 128); -charlm_positions P  rows of the position table (default T)\n"
                           "  -charlm_embed E (default 64)  -charlm_heads H (default 4)  -charlm_depth L (default 2)\n"
                           "  -charlm_iterations N  optimizer steps (default 500), each on -charlm_batch B windows (default 16) drawn at random\n"
                           "                        (seed -charlm_seed, default 1), the same windows on any number of ranks\n"
                           "  -charlm_lr R          Adam's learning rate (default 1e-3; -tao_type, -tao_adam_* ... pass through)\n"
                           "  -charlm_val_windows K the validation windows (default 256): consecutive, non-overlapping, from the held-out text's start\n"
                           "  -charlm_sample N      print N characters generated from -charlm_prompt TEXT (default \"The \") at\n"
                           "                        -charlm_temperature t (default 1; 0: the most likely character), seed -charlm_sample_seed\n"
                           "  -net_save FILE, -net_load FILE (-charlm_iterations 0 evaluates a loaded model), -net_parallel sharded|..., -net_precision\n"
                           "Ends with: summary: model=charlm params= context= iterations= train_loss= val_bpc= tokens_per_s= train_time_s= ranks=\n"
                           "precision= parallel= (train_loss: the mean of the last 10 batches' losses, nats per character)\n";

/*
  The data (rank 0 reads the files and broadcasts the text; every size is checked in 64 bits first):

    train  [ntrain]  bytes of the train files, concatenated in sorted order; val [nval] the held-out files' bytes
    ids    id[b]     0 for a byte absent from the train text, else 1 + its rank among the train text's distinct bytes

  A window starting at s is the input x[t] = id(train[s + t]) and the target y[t] = id(train[s + t + 1]), t < T. Step k
  draws B starts uniformly in [0, ntrain - T) from one PETSCRANDER48 stream (seed -charlm_seed) on every rank, and rank
  r takes windows bstart .. bstart + nlocal - 1 of them: the same global batch on any number of ranks.

    X [n][T]      token ids (the Net's input: embedding:V:E reads them as values)
    Y [n][T][V]   logits at every position (dense:V:tokens);  targets [n][T]: the next ids
    loss          crossentropy over (T, V) per sample: the mean over the n*T labels of the global batch

  Validation: K windows starting at 0, T, 2T, ... of the held-out text, evaluated B at a time; val_bpc is their mean
  cross-entropy / ln 2. Sampling runs rank 0's one sequence through the Net (the other ranks hold no sample but join
  the collective passes): the context is the prompt and what was drawn, its last T characters at positions 0..len-1
  (the rest padded with id 0, which a causal model never reads), the next character drawn from the softmax of the
  logits at position len-1 divided by the temperature.
*/
#include <petnet.h>
#include <petnetloss.h>
#include <petnetoptim.h>
#include "charlm/corpus.h"

/* ---------------------------------------------------------------------------------------------------------------- */
/* Windows and training */

typedef struct {
  Corpus         *corpus;
  Net             net;
  Loss            loss;
  PetscInt        T, B, nlocal, bstart; /* this rank holds windows bstart .. bstart + nlocal - 1 of a batch */
  PetscInt       *starts;               /* [B] the batch's window starts */
  PetscRandom     rnd;
  Vec             X, Y, dY, targets;
  PetscReal       recent[10]; /* the last 10 batch losses (train_loss is their mean) */
  PetscInt        nevals;
  PetscLogDouble *tick; /* [iterations + 1] the wall time at each update hook and at the end: one step each */
  PetscInt        nticks, maxticks;
} CharLM;

/* X[i][t] = id(text[s_i + t]), targets[i][t] = id(text[s_i + t + 1]) for this rank's windows i (starts s) */
static PetscErrorCode FillWindows(const Corpus *c, const unsigned char *text, PetscInt T, PetscInt n, const PetscInt *s, Vec X, Vec targets)
{
  PetscScalar *x, *y;

  PetscFunctionBegin;
  PetscCall(VecGetArrayWrite(X, &x));
  PetscCall(VecGetArrayWrite(targets, &y));
  for (PetscInt i = 0; i < n; i++) {
    for (PetscInt t = 0; t < T; t++) {
      x[i * T + t] = (PetscScalar)c->id[text[s[i] + t]];
      y[i * T + t] = (PetscScalar)c->id[text[s[i] + t + 1]];
    }
  }
  PetscCall(VecRestoreArrayWrite(targets, &y));
  PetscCall(VecRestoreArrayWrite(X, &x));
  PetscFunctionReturn(0);
}

/* The TaoSetUpdate hook: B window starts in [0, ntrain - T) drawn on every rank alike; this rank fills its share */
static PetscErrorCode NextBatch(Tao tao, PetscInt it, void *vctx)
{
  CharLM        *s       = (CharLM *)vctx;
  const PetscInt nstarts = s->corpus->ntrain - s->T;

  PetscFunctionBegin;
  if (s->nticks < s->maxticks) PetscCall(PetscTime(&s->tick[s->nticks++]));
  for (PetscInt b = 0; b < s->B; b++) {
    PetscReal r;

    PetscCall(PetscRandomGetValueReal(s->rnd, &r));
    s->starts[b] = PetscMin((PetscInt)(r * nstarts), nstarts - 1);
  }
  PetscCall(FillWindows(s->corpus, s->corpus->train, s->T, s->nlocal, s->starts + s->bstart, s->X, s->targets));
  PetscFunctionReturn(0);
}

static PetscErrorCode Objective(Tao tao, Vec theta, PetscReal *f, Vec G, void *vctx)
{
  CharLM *s = (CharLM *)vctx;

  PetscFunctionBegin;
  PetscCall(NetForward(s->net, s->X, s->Y));
  PetscCall(LossEvaluate(s->loss, s->Y, s->targets, f, s->dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(s->net, s->dY, NULL, G));
  s->recent[s->nevals++ % 10] = *f;
  PetscFunctionReturn(0);
}

/* Mean cross-entropy (nats per character) over K windows of the held-out text at 0, T, 2T, ..., B at a time */
static PetscErrorCode Validate(CharLM *s, PetscInt K, PetscReal *nats)
{
  MPI_Comm    comm = PetscObjectComm((PetscObject)s->net);
  PetscMPIInt rank, size;
  PetscReal   sum = 0;
  PetscInt   *starts;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(NetSetTraining(s->net, PETSC_FALSE));
  PetscCall(PetscMalloc1(s->B, &starts));
  for (PetscInt k0 = 0; k0 < K; k0 += s->B) {
    const PetscInt m = PetscMin(s->B, K - k0), nlocal = m / size + (rank < m % size ? 1 : 0);
    PetscInt       first = 0;
    Vec            X, Y, targets;
    PetscReal      f;

    PetscCallMPI(MPI_Exscan(&nlocal, &first, 1, MPIU_INT, MPI_SUM, comm));
    if (!rank) first = 0;
    for (PetscInt i = 0; i < nlocal; i++) starts[i] = (k0 + first + i) * s->T;
    PetscCall(NetCreateVecs(s->net, nlocal, &X, &Y));
    PetscCall(VecCreateMPI(comm, nlocal * s->T, PETSC_DETERMINE, &targets));
    PetscCall(FillWindows(s->corpus, s->corpus->val, s->T, nlocal, starts, X, targets));
    PetscCall(NetForward(s->net, X, Y));
    PetscCall(LossEvaluate(s->loss, Y, targets, &f, NULL));
    sum += f * m; /* f is the mean over the chunk's m T labels */
    PetscCall(VecDestroy(&targets));
    PetscCall(VecDestroy(&Y));
    PetscCall(VecDestroy(&X));
  }
  PetscCall(PetscFree(starts));
  PetscCall(NetSetTraining(s->net, PETSC_TRUE));
  *nats = sum / K;
  PetscFunctionReturn(0);
}

/* Prints the prompt and N characters drawn one at a time (see the opening comment) */
static PetscErrorCode Sample(CharLM *s, const char *prompt, PetscInt N, PetscReal temperature, unsigned long seed)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)s->net);
  const Corpus  *c    = s->corpus;
  const PetscInt T = s->T, V = c->V, lp = (PetscInt)strlen(prompt);
  PetscMPIInt    rank;
  PetscRandom    rnd;
  Vec            X, Y;
  PetscInt      *ctx, len = lp;
  PetscReal     *p;
  char          *text;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCheck(lp > 0, comm, PETSC_ERR_ARG_WRONG, "-charlm_prompt is empty: give at least one character, e.g. -charlm_prompt \"The \"");
  PetscCall(NetSetTraining(s->net, PETSC_FALSE));
  PetscCall(NetCreateVecs(s->net, rank ? 0 : 1, &X, &Y));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRANDER48));
  PetscCall(PetscRandomSetSeed(rnd, seed));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(PetscMalloc3(lp + N, &ctx, V, &p, lp + N + 1, &text));
  for (PetscInt i = 0; i < lp; i++) {
    ctx[i]  = c->id[(unsigned char)prompt[i]];
    text[i] = prompt[i];
  }
  for (PetscInt k = 0; k < N; k++, len++) {
    const PetscInt first = PetscMax(0, len - T), last = len - 1 - first; /* the window and the position read */
    PetscInt       next = 0;

    if (!rank) {
      PetscScalar *x;

      PetscCall(VecGetArrayWrite(X, &x));
      for (PetscInt t = 0; t < T; t++) x[t] = first + t < len ? (PetscScalar)ctx[first + t] : 0;
      PetscCall(VecRestoreArrayWrite(X, &x));
    }
    PetscCall(NetForward(s->net, X, Y));
    if (!rank) {
      const PetscScalar *y;
      PetscReal          m = PETSC_MIN_REAL, z = 0, r;

      PetscCall(VecGetArrayRead(Y, &y));
      for (PetscInt v = 1; v < V; v++) { /* never draws id 0 (no byte) */
        if (PetscRealPart(y[last * V + v]) > m) {
          m    = PetscRealPart(y[last * V + v]);
          next = v;
        }
      }
      if (temperature > 0) {
        for (PetscInt v = 1; v < V; v++) z += p[v] = PetscExpReal((PetscRealPart(y[last * V + v]) - m) / temperature);
        PetscCall(PetscRandomGetValueReal(rnd, &r));
        r *= z;
        for (next = 1; next < V - 1 && r >= p[next]; next++) r -= p[next];
      }
      PetscCall(VecRestoreArrayRead(Y, &y));
    }
    ctx[len]  = next;
    text[len] = (char)c->byte[next];
  }
  text[len] = 0;
  PetscCall(PetscPrintf(comm, "sample (%" PetscInt_FMT " characters, temperature %g, seed %lu):\n", N, (double)temperature, seed));
  for (PetscInt i = 0; i < len; i++) { /* bytes other than printable ASCII, newline and tab as \xNN (a UTF-8 character may be cut) */
    const unsigned char b = (unsigned char)text[i];

    if ((b >= 32 && b < 127) || b == '\n' || b == '\t')
      PetscCall(PetscPrintf(comm, "%c", b));
    else
      PetscCall(PetscPrintf(comm, "\\x%02x", b));
  }
  PetscCall(PetscPrintf(comm, "\n"));
  PetscCall(PetscFree3(ctx, p, text));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&Y));
  PetscCall(VecDestroy(&X));
  PetscCall(NetSetTraining(s->net, PETSC_TRUE));
  PetscFunctionReturn(0);
}

/* The models of -charlm_model (see help) */
static const char *const CharLMModels[] = {"auto", "gpt", "gpt_nope", "mlp", "gpt_rope", "CharLMModel", "CHARLM_MODEL_", NULL};

/* The model (see help): L blocks transformer:H:4E:causal, or the same block spelled out as residual blocks when the
   library has attention but not the shorthand; gpt_nope without the position table; gpt_rope without it but with rotary
   positions in attention (model 4); mlp, a per-position stand-in.
   auto (model 0): the first of gpt, gpt_nope, mlp whose layer kinds the library has */
static PetscErrorCode DefaultLayers(MPI_Comm comm, PetscInt model, const Corpus *c, PetscInt T, PetscInt P, PetscInt E, PetscInt H, PetscInt L, size_t len, char spec[], PetNetShape *in, const char **arch)
{
  PetscErrorCode (*transformer)(Layer) = NULL, (*attention)(Layer) = NULL, (*position)(Layer) = NULL;
  size_t n;

  PetscFunctionBegin;
  PetscCall(PetscFunctionListFind(LayerList, "transformer", &transformer));
  PetscCall(PetscFunctionListFind(LayerList, "attention", &attention));
  PetscCall(PetscFunctionListFind(LayerList, "position", &position));
  PetscCheck(model != 1 || (attention && position), comm, PETSC_ERR_SUP, "-charlm_model gpt needs the layer kinds attention and position, and this PetNet lacks %s: give -charlm_model %s", attention ? "position" : "attention",
             attention ? "gpt_nope (no position table) or mlp" : "mlp");
  PetscCheck((model != 2 && model != 4) || attention, comm, PETSC_ERR_SUP, "-charlm_model %s needs the layer kind attention, which this PetNet lacks: give -charlm_model mlp", CharLMModels[model]);
  if (model == 2 || model == 4) position = NULL;
  if (model == 3) attention = NULL;
  if (attention) { /* without the position layer (not yet in the library): no position table, arch=gpt_nope */
    if (position)
      PetscCall(PetscSNPrintf(spec, len, "embedding:%" PetscInt_FMT ":%" PetscInt_FMT ",position:%" PetscInt_FMT, c->V, E, P));
    else
      PetscCall(PetscSNPrintf(spec, len, "embedding:%" PetscInt_FMT ":%" PetscInt_FMT, c->V, E));
    for (PetscInt l = 0; l < L; l++) {
      PetscCall(PetscStrlen(spec, &n));
      if (transformer)
        PetscCall(PetscSNPrintf(spec + n, len - n, ",transformer:%" PetscInt_FMT ":%" PetscInt_FMT ":causal%s", H, 4 * E, model == 4 ? ":rotary" : ""));
      else
        PetscCall(PetscSNPrintf(spec + n, len - n, ",residual(layernorm,attention:%" PetscInt_FMT ":causal%s),residual(layernorm,dense:%" PetscInt_FMT ":tokens,gelu,dense:%" PetscInt_FMT ":tokens)", H, model == 4 ? ":rotary" : "", 4 * E, E));
    }
    PetscCall(PetscStrlen(spec, &n));
    PetscCall(PetscSNPrintf(spec + n, len - n, ",layernorm,dense:%" PetscInt_FMT ":tokens", c->V));
    in->ndim   = 1;
    in->dim[0] = T;
    *arch      = position ? "gpt" : model == 4 ? "gpt_rope" : "gpt_nope";
  } else { /* (T, 1, E) through 1x1 convolutions: each position on its own */
    PetscCall(PetscSNPrintf(spec, len, "embedding:%" PetscInt_FMT ":%" PetscInt_FMT ",layernorm,conv2d:%" PetscInt_FMT ":1:1:0,gelu,conv2d:%" PetscInt_FMT ":1:1:0,layernorm,conv2d:%" PetscInt_FMT ":1:1:0", c->V, E, 4 * E, E, c->V));
    in->ndim   = 2;
    in->dim[0] = T;
    in->dim[1] = 1;
    *arch      = "mlp";
  }
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm        comm;
  PetscMPIInt     rank, size;
  Corpus          corpus;
  CharLM          s;
  Net             net;
  Tao             tao;
  Vec             theta;
  PetNetShape     in;
  char            path[PETSC_MAX_PATH_LEN] = "/usr/share/games/fortunes", prompt[1024] = "The ", spec[4096];
  PetscInt        T = 128, P = -1, E = 64, H = 4, L = 2, iterations = 500, K = 256, nsample = 0, seed = 1, sampleseed = 1, nparams, model = 0;
  PetscReal       lr = 1e-3, temperature = 1.0, valnats = 0, trainloss = 0;
  PetscInt        niter  = 0;
  PetscReal       stepms = 0;
  PetscLogDouble  t0, t1;
  const char     *arch = NULL;
  NetPrecision    precision;
  NetParallelType parallel;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetNetTaoInitializePackage()); /* PetNet's TAO types (adam, ...) for TaoSetType and -tao_type */
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCall(PetscMemzero(&corpus, sizeof(corpus)));
  PetscCall(PetscMemzero(&s, sizeof(s)));
  s.B = 16;
  PetscOptionsBegin(comm, NULL, "Character-level GPT (bin/charlm)", NULL);
  PetscCall(PetscOptionsString("-charlm_corpus", "Folder of text files (every 10th held out) or one text file (its last tenth held out)", NULL, path, path, sizeof(path), NULL));
  PetscCall(PetNetOptionsBoundedInt("-charlm_context", "Tokens per window", NULL, T, &T, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-charlm_positions", "Rows of the learned position table (default: the context)", NULL, P, &P, NULL, -1));
  PetscCall(PetNetOptionsBoundedInt("-charlm_embed", "Embedding width E", NULL, E, &E, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-charlm_heads", "Attention heads H (dividing E)", NULL, H, &H, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-charlm_depth", "Transformer blocks L", NULL, L, &L, NULL, 0));
  PetscCall(
      PetscOptionsEList("-charlm_model", "The model: gpt, gpt_nope (no position table), gpt_rope (rotary positions, no table), mlp (per-position stand-in), auto (the first the library has)", NULL, CharLMModels, 5, CharLMModels[model], &model, NULL));
  PetscCall(PetNetOptionsBoundedInt("-charlm_iterations", "Optimizer steps", NULL, iterations, &iterations, NULL, 0));
  PetscCall(PetNetOptionsBoundedInt("-charlm_batch", "Windows per step (global)", NULL, s.B, &s.B, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-charlm_seed", "Seed of the windows' draws", NULL, seed, &seed, NULL, 0));
  PetscCall(PetscOptionsReal("-charlm_lr", "Adam's learning rate", NULL, lr, &lr, NULL));
  PetscCall(PetNetOptionsBoundedInt("-charlm_val_windows", "Validation windows (consecutive, from the held-out text's start)", NULL, K, &K, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-charlm_sample", "Characters to generate after training (0: none)", NULL, nsample, &nsample, NULL, 0));
  PetscCall(PetscOptionsString("-charlm_prompt", "Text the sample starts from", NULL, prompt, prompt, sizeof(prompt), NULL));
  PetscCall(PetscOptionsReal("-charlm_temperature", "Sampling temperature (0: the most likely character)", NULL, temperature, &temperature, NULL));
  PetscCall(PetNetOptionsBoundedInt("-charlm_sample_seed", "Seed of the sample's draws", NULL, sampleseed, &sampleseed, NULL, 0));
  PetscOptionsEnd();
  if (P < 0) P = T;
  PetscCheck(T <= P, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-charlm_context %" PetscInt_FMT " is longer than the position table's %" PetscInt_FMT " rows (-charlm_positions): give -charlm_context %" PetscInt_FMT " or less, or -charlm_positions %" PetscInt_FMT, T, P, P, T);
  PetscCheck(E % H == 0, comm, PETSC_ERR_ARG_INCOMP, "-charlm_heads %" PetscInt_FMT " does not divide -charlm_embed %" PetscInt_FMT ": give heads that divide the embedding width", H, E);
  PetscCheck(temperature >= 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-charlm_temperature must be >= 0 (0: the most likely character), not %g", (double)temperature);
  PetscCall(CharLMCorpusRead(comm, path, T, &corpus));
  PetscCheck(((PetscInt64)K) * T + 1 <= corpus.nval, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-charlm_val_windows %" PetscInt_FMT " windows of %" PetscInt_FMT " characters need %" PetscInt64_FMT " + 1 held-out characters, but %s has %" PetscInt_FMT ": give -charlm_val_windows %" PetscInt_FMT " or less", K, T, (PetscInt64)K * T,
             path, corpus.nval, (corpus.nval - 1) / T);

  PetscCall(NetCreate(comm, &net));
  PetscCall(DefaultLayers(comm, model, &corpus, T, P, E, H, L, sizeof(spec), spec, &in, &arch));
  PetscCall(NetSetLayers(net, spec));
  PetscCall(NetSetInputShape(net, &in));
  PetscCall(NetSetFromOptions(net)); /* -net_layers, -net_load, -net_parallel, -net_precision, -net_seed ... */
  {
    PetscBool given[3];

    PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &given[0]));
    PetscCall(PetscOptionsHasName(NULL, NULL, "-net_graph", &given[1]));
    PetscCall(PetscOptionsHasName(NULL, NULL, "-net_load", &given[2]));
    if (given[0] || given[1] || given[2]) arch = "given"; /* the summary's arch: gpt, mlp (the stand-in) or given */
  }
  PetscCall(NetSetUp(net));
  {
    PetNetShape shape;
    PetscInt    nin, nout;

    PetscCall(NetGetInputShape(net, &shape));
    PetscCall(PetNetShapeSize(&shape, &nin));
    PetscCall(NetGetOutputShape(net, &shape));
    PetscCall(PetNetShapeSize(&shape, &nout));
    PetscCheck(nin == T && nout == T * corpus.V, comm, PETSC_ERR_ARG_INCOMP,
               "bin/charlm needs a Net from %" PetscInt_FMT " token ids to (%" PetscInt_FMT ", %" PetscInt_FMT ") logits (-charlm_context T, the corpus's V), but this one maps %" PetscInt_FMT " values to %" PetscInt_FMT
               ": a model loaded with -net_load must have been trained with the same -charlm_context and corpus",
               T, T, corpus.V, nin, nout);
  }

  /* the batch: windows split over the ranks by samples */
  s.corpus = &corpus;
  s.net    = net;
  s.T      = T;
  s.nlocal = s.B / size + (rank < s.B % size ? 1 : 0);
  PetscCallMPI(MPI_Exscan(&s.nlocal, &s.bstart, 1, MPIU_INT, MPI_SUM, comm));
  if (!rank) s.bstart = 0;
  PetscCall(PetscMalloc1(s.B, &s.starts));
  PetscCall(NetCreateVecs(net, s.nlocal, &s.X, &s.Y));
  PetscCall(VecDuplicate(s.Y, &s.dY));
  PetscCall(VecCreateMPI(comm, s.nlocal * T, PETSC_DETERMINE, &s.targets));
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &s.rnd));
  PetscCall(PetscRandomSetType(s.rnd, PETSCRANDER48));
  PetscCall(PetscRandomSetSeed(s.rnd, (unsigned long)seed));
  PetscCall(PetscRandomSeed(s.rnd));
  PetscCall(LossCreate(comm, &s.loss));
  PetscCall(LossSetType(s.loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(s.loss));

  PetscCall(TaoCreate(comm, &tao));
  PetscCall(TaoSetType(tao, TAOADAM));
  PetscCall(PetNetTaoSetLearningRate(tao, lr));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(TaoSetSolution(tao, theta));
  PetscCall(TaoSetObjectiveAndGradient(tao, NULL, Objective, &s));
  PetscCall(TaoSetUpdate(tao, NextBatch, &s));
  PetscCall(TaoSetMaximumIterations(tao, iterations));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(PetscTime(&t0));
  s.maxticks = iterations + 1;
  PetscCall(PetscMalloc1(s.maxticks, &s.tick));
  if (iterations > 0) PetscCall(TaoSolve(tao));
  PetscCall(PetscTime(&t1));
  if (s.nticks < s.maxticks) s.tick[s.nticks++] = t1;
  for (PetscInt k = 0; k + 1 < s.nticks; k++) s.tick[k] = s.tick[k + 1] - s.tick[k]; /* the steps' times */
  if (s.nticks > 1) {
    PetscCall(PetscSortReal(s.nticks - 1, (PetscReal *)s.tick));
    stepms = 1e3 * s.tick[(s.nticks - 1) / 2]; /* the median step: the machine may be shared */
  }
  PetscCall(PetscFree(s.tick));
  PetscCall(TaoGetIterationNumber(tao, &niter));
  PetscCall(NetSaveFromOptions(net)); /* -net_save FILE: the trained Net */
  for (PetscInt i = 0; i < PetscMin(s.nevals, 10); i++) trainloss += s.recent[i] / PetscMin(s.nevals, 10);
  PetscCall(Validate(&s, K, &valnats));
  if (nsample) PetscCall(Sample(&s, prompt, nsample, temperature, (unsigned long)sampleseed));

  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(NetGetPrecision(net, &precision));
  PetscCall(NetGetParallel(net, &parallel));
  PetscCall(PetscPrintf(comm,
                        "summary: model=charlm params=%" PetscInt_FMT " context=%" PetscInt_FMT " iterations=%" PetscInt_FMT " train_loss=%.10f val_bpc=%.10f tokens_per_s=%.0f train_time_s=%.2f ranks=%d precision=%s parallel=%s vocab=%" PetscInt_FMT
                        " batch=%" PetscInt_FMT " train_chars=%" PetscInt_FMT " val_chars=%" PetscInt_FMT " arch=%s step_ms=%.2f",
                        nparams, T, niter, (double)trainloss, (double)(valnats / PetscLogReal(2.0)), t1 > t0 ? (double)((PetscReal)niter * s.B * T / (t1 - t0)) : 0.0, (double)(t1 - t0), size, NetPrecisions[precision], NetParallelTypes[parallel],
                        corpus.V, s.B, corpus.ntrain, corpus.nval, arch, (double)stepms));
  { /* the BLAS's kernels (issue 31): a rate is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(LossDestroy(&s.loss));
  PetscCall(PetscRandomDestroy(&s.rnd));
  PetscCall(VecDestroy(&s.targets));
  PetscCall(VecDestroy(&s.dY));
  PetscCall(VecDestroy(&s.Y));
  PetscCall(VecDestroy(&s.X));
  PetscCall(PetscFree(s.starts));
  PetscCall(NetDestroy(&net));
  PetscCall(CharLMCorpusDestroy(&corpus));
  PetscCall(PetscFinalize());
  return 0;
}
