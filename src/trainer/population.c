/*
  Population training: LTFB tournaments and population-based search (issue 33, items 1-4).

  A population is K trainers on K equal sub-communicators of the job's communicator,

    rank r of the job -> trainer k = r / P, rank r % P of it,   P = size / K   (MPI_Comm_split, TrainerPopulationSplit())

  Each trainer is a whole PetNet Trainer on its sub-communicator: its Net, Datasets and optimizer, in any mode the
  Trainer has (data parallel, sharded, model-parallel, spatial: they all live on the sub-communicator). The program
  creates its objects on the sub-communicator and hands the job's communicator to TrainerSetPopulation(). The
  population adds, at TrainerSetUp():

    data    disjoint: trainer k trains on the k-th of K contiguous shards [k S, (k + 1) S) of the training set,
                      S = N / K (the N % K samples at the end are not used); shared: every trainer on all N samples.
            The last Nt samples of the shard are the trainer's tournament set (-trainer_tournament_samples Nt), a
            memory Dataset (DatasetCreateSubset()); the training Dataset keeps [start, start + S - Nt)
            (DatasetSetOffset(), DatasetSetLimit()).
    hyper   the trainer's hyperparameters, slots h = 0 .. nhyper-1 (PopHyperKinds): every real hyperparameter its Tao
            and Loss have, found by the getter composed on them, named by the option's suffix:
              every PetNet optimizer  lr, wd (-tao_<type>_lr, -tao_<type>_weight_decay)     slots 0, 1
              sgd                     momentum, dampening
              adam, adamw             beta1, beta2, eps
              rmsprop                 alpha, eps, momentum
              kfac                    damping, stat_decay, momentum, kl_clip
              every PetNet optimizer  gamma, lr_min (the schedule's: -tao_lr_gamma, -tao_lr_min)
              crossentropy loss       smoothing (-loss_label_smoothing)                      last
            -trainer_population_init NAME:LO:HI:log|lin spreads trainer k's initial value over the range:
            LO (HI/LO)^(k/(K-1)) (log) or LO + (HI - LO) k/(K-1) (lin); K = 1: LO. A name the TAO type (or the loss)
            does not have, or a range that leaves the setter's valid range (beta1 in [0, 1), damping > 0, ...), is
            refused at TrainerSetUp(), before any training.

  and a tournament at the end of every -trainer_tournament_interval-th epoch (after the divergence test, before the test
  evaluation), or with -trainer_tournament_unit steps after every interval-th optimizer step, counted across epochs
  (global step s = e B + b after batch b of epoch e, B batches per epoch; see "Tournaments between steps" below):

    1. pairs: a permutation of 0..K-1 drawn from PETSCRAND48 seeded with (seed, tournament number), identical on every
       rank and for every rank count; (perm[0], perm[1]), (perm[2], perm[3]), ...; with K odd, perm[K-1] sits out.
    2. rank r of trainer a exchanges its local parts with rank r of trainer b (MPI_Sendrecv on the job's communicator):
       header [POP_HEADER] = [local length n, state Vecs nstate, step, diverged, buffers nb, nhyper, the nhyper
       hyperparameter values in slot order, zeros up to POP_MAXHYPER], then theta [n], with
       -trainer_tournament_exchange state the optimizer's state Vecs [nstate][n], and the Net's buffers [nb]
       (batchnorm's running statistics: a model is its parameters and its buffers). The trainers are alike, so the local layouts agree; a mismatch
       (trainers that differ) is refused on every rank, before anything is copied.
    3. each trainer scores its own model and the partner's on its own tournament set (-trainer_tournament_metric loss:
       lower is better, the cross-entropy without label smoothing; accuracy: higher), and keeps the partner's model
       only if it is strictly better (a tie keeps its own): each trainer decides on its own set, as LTFB does. A
       diverged model (NaN or Inf) scores worst.
    4. a trainer that took the partner's model takes its hyperparameters (all slots), each times a factor drawn from
       -trainer_population_explore NAME:f1,f2,... (draw u_{k,h}, the same on every rank: PopDrawIndex()), clipped into
       [clo, chi] = the setter's valid range, an open end (beta1 < 1, stat_decay < 1, smoothing < 1, damping > 0)
       closed by the -trainer_population_init range's end; an explore factor > 1 of a name with an open upper end
       and no init range is refused before training. A clipped value is marked "(clipped)" in the tournament line.
       With exchange state it takes the optimizer state and step; with exchange parameters a diverged trainer's own
       optimizer state is reset (its moments hold NaN).
    5. rank 0 of the job prints one line: the pairs, both scores of each side, who took whose model, lr and every
       hyperparameter named by init or explore after explore, the trainers replaced after a divergence; it keeps the
       parent of every trainer's model for the lineage. The -trainer_population_monitor CSV has a column for each of
       those hyperparameters after lr.

  A checkpoint holds every slot's value (the optimizer's settings and the loss's smoothing, src/trainer/checkpoint.c);
  a restart of the population takes them from the trainer's file (TrainerPopulationRestoreHyper_Private()).

  A trainer whose loss becomes NaN or Inf (or passes -trainer_divergence_factor) does not stop the job: it is flagged
  and its partner's model replaces it at the next tournament. At the end the winner is the trainer with the best
  score on its own tournament set (the test set is not used to choose: it stays a test); -net_save writes the
  winner's model, and rank 0 prints the winner, every trainer's test accuracy and the winner's lineage.

  Tournaments between steps (-trainer_tournament_unit steps). An epoch is one TaoSolve() whose iterations draw the
  batches in the update hook (TrainerNextBatch_Private()); the tournament after step s runs in the hook before batch
  b = s - e B of epoch e is drawn (TrainerPopulationStep_Private()), or, when s ends an epoch, at the epoch's end in
  the place of the epochs unit's (so that the test evaluation, the CSV row and a checkpoint see it). It is the same
  tournament as above (pairs from (seed, tournament number), the exchange, the scores, explore). Why it may run inside
  the solve:
    - PetNet's optimizers (sgd, adam, adamw, rmsprop, kfac; src/optim/optim.c) run "hook -> f, g at x -> update": the
      hook comes before anything of the iteration is computed, and they read the solution, the state Vecs, the step
      (bias correction, schedule) and lr, wd after it, so a replaced model, state, step or hyperparameter is used by
      the very next update. Nothing of an earlier iteration is kept: no gradient, no previous iterate, no line search;
      K-FAC takes its statistics from the pass of the update's own batch, after the hook. K-FAC's running curvature
      averages are not part of the exchanged state (nor of a checkpoint): a trainer that takes a model keeps its own,
      which the next batches update, as at the epochs unit's tournaments.
    - the scores are computed in evaluation mode (no dropout mask drawn, so its counter does not move; batchnorm's
      running statistics not updated) on the tournament set, before the batch's forward pass, which sets up the Net's
      workspace and the Trainer's output Vecs for its own batch size again; the Net's buffers of the kept model are
      put back as they were. A tournament that nobody wins leaves training bit for bit as without it (tested).
  The trainers must take the same number of steps per epoch (equal shards and batch size; checked at TrainerSetUp()).
  A trainer whose solve stops before the epoch's last batch (a NaN or Inf loss) passes the remaining steps without
  training but takes part in their tournaments, where its partner's model replaces it; it trains on from there
  (TrainerPopulationSkipSteps_Private()). A restart at the end of epoch e counts e B / interval tournaments before it.
*/
#include <petnet/private/trainerimpl.h>
#include <petnet/private/layerimpl.h> /* the layers' buffers (batchnorm's running statistics) move with the model */

#define POP_MAXHYPER  12                  /* a trainer's hyperparameter slots: lr, wd, the type's, the schedule's, smoothing */
#define POP_NFACTORS  16                  /* explore factors per hyperparameter */
#define POP_NREQUEST  16                  /* names given to -trainer_population_init and -trainer_population_explore */
#define POP_HEADER    (6 + POP_MAXHYPER)  /* the exchange's header: n, nstate, step, diverged, nbuffers, nhyper, values */
#define POP_REPORT    (8 + POP_MAXHYPER)  /* a trainer's line of the tournament report */
#define POP_MONITOR   (10 + POP_MAXHYPER) /* a trainer's row of the CSV monitor */
#define POP_HYPER_LEN 24

/* A hyperparameter a population can search: every real hyperparameter of PetNet's TAO types, and the loss's label
   smoothing. The running Tao (or, for smoothing, Loss) has it when the function 'query' is composed on it, so a name
   belongs to a TAO type without a list of types here. [lo, hi] is the setter's valid range, an end excluded when open. */
typedef struct {
  const char *name;                           /* as in the options: the option's suffix (-tao_adam_beta1: beta1), or lr, wd, smoothing */
  const char *what;                           /* for messages */
  const char *query;                          /* composed on the Tao (or the Loss) of the types that have it */
  PetscErrorCode (*taoget)(Tao, PetscReal *); /* a hyperparameter of the Tao alone: its public getter and setter */
  PetscErrorCode (*taoset)(Tao, PetscReal);
  PetscErrorCode (*get)(Trainer, PetscReal *); /* else (one of two values, or the Loss's): a wrapper below */
  PetscErrorCode (*set)(Trainer, PetscReal);
  PetscReal lo, hi;
  PetscBool loopen, hiopen;
  PetscInt  schedule; /* >= 0: only with this PetNetLRScheduleType (gamma: step, lr_min: cosine) */
} PopHyperKind;

/* What -trainer_population_init and -trainer_population_explore said about one name, before the TAO type is known */
typedef struct {
  char      name[POP_HYPER_LEN];
  PetscBool explore; /* first named by -trainer_population_explore (else by -trainer_population_init): for messages */
  PetscBool init;    /* -trainer_population_init gave a range */
  PetscReal lo, hi;
  PetscBool logscale;
  PetscInt  nfactors; /* -trainer_population_explore factors (0: copied as is) */
  PetscReal factors[POP_NFACTORS];
} PopRequest;

/* One hyperparameter of this trainer (slot h of the exchange header, the report and the CSV) */
typedef struct {
  const PopHyperKind *kind;
  const PopRequest   *req;      /* NULL: neither searched nor spread, only copied with the model */
  PetscReal           clo, chi; /* explore values are clipped into [clo, chi] (see PopHyperClipRange()) */
  PetscReal           value;    /* this trainer's */
  PetscBool           clipped;  /* the last explore step clipped it */
} PopHyper;

typedef enum { POP_METRIC_LOSS, POP_METRIC_ACCURACY } PopMetric;
static const char *const PopMetrics[] = {"loss", "accuracy", "PopMetric", "POP_METRIC_", NULL};
typedef enum { POP_EXCHANGE_PARAMETERS, POP_EXCHANGE_STATE } PopExchange;
static const char *const PopExchanges[] = {"parameters", "state", "PopExchange", "POP_EXCHANGE_", NULL};
typedef enum { POP_DATA_DISJOINT, POP_DATA_SHARED } PopData;
static const char *const PopDatas[] = {"disjoint", "shared", "PopData", "POP_DATA_", NULL};
typedef enum { POP_UNIT_EPOCHS, POP_UNIT_STEPS } PopUnit;
static const char *const PopUnits[] = {"epochs", "steps", "PopUnit", "POP_UNIT_", NULL};

struct _n_TrainerPopulation {
  MPI_Comm    comm;                  /* the job's communicator (a PETSc duplicate) */
  PetscMPIInt rank, size, P;         /* in the job; P ranks per trainer */
  PetscInt    K, k;                  /* trainers; this one */
  PopData     data;                  /* -trainer_population_data */
  PetscInt    tsamples;              /* -trainer_tournament_samples (PETSC_DECIDE: a tenth of the shard) */
  PetscInt    shardstart, shardsize; /* the shard, in samples of the training source */
  Dataset     tournament;            /* the last tsamples of the shard */
  PetscInt    interval;              /* -trainer_tournament_interval */
  PopUnit     unit;                  /* -trainer_tournament_unit */
  PetscInt    nbatches;              /* batches (= optimizer steps) per epoch, the same on every trainer (steps unit) */
  PetscInt    laststep;              /* steps unit: the global step after which the last tournament ran (-1: none yet) */
  PetscInt    seed;                  /* -trainer_population_seed */
  PopExchange exchange;              /* -trainer_tournament_exchange */
  PopMetric   metric;                /* -trainer_tournament_metric */
  PopRequest  req[POP_NREQUEST];     /* -trainer_population_init and -trainer_population_explore, by name */
  PetscInt    nreq;
  PopHyper    hyper[POP_MAXHYPER]; /* TrainerPopulationSetUp_Private(): lr, wd, the TAO type's own, smoothing */
  PetscInt    nhyper;
  char        monitor[PETSC_MAX_PATH_LEN]; /* -trainer_population_monitor: CSV file(s), %d for the trainer */
  FILE      **files;                       /* job rank 0: one per trainer, or one ([0]) */
  Vec         keep;                        /* the own parameters while the partner's are scored */

  PetscBool diverged; /* this trainer's loss became NaN or Inf (or exploded) since its last replacement */
  PetscInt  ntournaments, exchanges, replaced;
  PetscInt  partner;               /* of the last tournament (-1: none, or sat out) */
  PetscReal ownmetric, partmetric; /* the last tournament's metrics on the own set */
  PetscBool adopted;
  PetscInt *parent, nparent, *tepoch, *tstep; /* job rank 0: parent[t K + i] = the trainer whose model i took at tournament t,
                                                  which ran in epoch tepoch[t] (1-based), after global step tstep[t] (steps unit) */

  PetscBool finished; /* TrainerPopulationFinish_Private() ran */
  PetscInt  winner, totalexchanges;
  PetscInt  tfirst; /* the first tournament of this run (> 0 after a restart: the lineage before it is not kept) */
  PetscBool named;  /* -trainer_checkpoint/-trainer_restart made the trainer's own (PopTrainerFileName()) */
  PetscReal winnerlr, winneracc;
};

/*@C
  TrainerPopulationSplit - splits a communicator into the sub-communicators of a population's trainers

  Collective

  Input Parameters:
+ comm   - the job's communicator
- prefix - the options prefix of the Trainers (NULL for none): -[prefix]trainer_population K is read

  Output Parameters:
+ sub - the communicator of this rank's trainer: ranks k P .. (k + 1) P - 1 of comm, P = size / K (free it with
        MPI_Comm_free() after destroying the objects made on it)
. k   - this rank's trainer, 0 <= k < K (may be NULL)
- K   - the number of trainers (may be NULL); 1 without the option (sub is then a copy of comm)

  Options Database Key:
. -trainer_population <K> - the number of trainers; it must divide the number of ranks

  Notes:
  A program that supports populations creates its Net, Loss, Datasets and Trainer on sub, then gives the Trainer the
  job's communicator with TrainerSetPopulation(). bin/fashion does this.

  Level: intermediate

.seealso: `TrainerSetPopulation()`, `TrainerGetPopulation()`, `TrainerPopulationGetResults()`
@*/
PetscErrorCode TrainerPopulationSplit(MPI_Comm comm, const char prefix[], MPI_Comm *sub, PetscInt *k, PetscInt *K)
{
  PetscMPIInt size, rank;
  PetscInt    n = 1;
  PetscBool   set;

  PetscFunctionBegin;
  PetscValidPointer(sub, 3);
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCall(PetNetOptionsGetInt(NULL, prefix, "-trainer_population", &n, &set));
  PetscCheck(n >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-%strainer_population %" PetscInt_FMT ": give a number of trainers >= 1 that divides the %d ranks of the job", prefix ? prefix : "", n, size);
  PetscCheck(size % n == 0, comm, PETSC_ERR_ARG_INCOMP,
             "-%strainer_population %" PetscInt_FMT " does not divide the %d ranks of the job: the trainers are equal sub-communicators, so give a number of trainers that divides %d (or run on a multiple of %" PetscInt_FMT " ranks)",
             prefix ? prefix : "", n, size, size, n);
  PetscCallMPI(MPI_Comm_split(comm, rank / (size / (PetscMPIInt)n), rank, sub));
  if (k) *k = rank / (size / n);
  if (K) *K = n;
  PetscFunctionReturn(0);
}

/*@
  TrainerSetPopulation - makes the Trainer one trainer of a population on the job's communicator

  Collective on comm

  Input Parameters:
+ tr   - the Trainer, created on the communicator TrainerPopulationSplit() gave this rank
- comm - the job's communicator (the one that was split)

  Options Database Keys (read by TrainerSetFromOptions()):
+ -trainer_population_data <disjoint,shared>         - each trainer on its contiguous shard of the training set, or all on all of it
. -trainer_tournament_samples <n>                    - samples at the end of the shard held out as the trainer's tournament set (default a tenth)
. -trainer_tournament_interval <n>                   - a tournament every n epochs, or every n optimizer steps (default 1)
. -trainer_tournament_unit <epochs,steps>            - what the interval counts: epochs, or optimizer steps (mini-batches) counted across epochs
. -trainer_tournament_metric <loss,accuracy>         - how a trainer scores the two models on its tournament set (default loss)
. -trainer_tournament_exchange <parameters,state>    - exchange the parameters only, or the optimizer's state too
. -trainer_population_seed <s>                       - seed of the pairings and of the explore draws
. -trainer_population_init <name:lo:hi:log|lin,...>  - spread the trainers' initial hyperparameters over ranges; names: lr, wd,
                                                       gamma, lr_min (the schedule's), smoothing (crossentropy's label
                                                       smoothing) and the TAO type's own: momentum, dampening (sgd); beta1,
                                                       beta2, eps (adam, adamw); alpha, eps, momentum (rmsprop); damping,
                                                       stat_decay, momentum, kl_clip (kfac)
. -trainer_population_explore <name:f1,f2,...>       - a trainer that takes a model takes its hyperparameters times a factor
                                                       drawn from the list, clipped into the valid range (an open end,
                                                       beta1 < 1, closed by the init range)
- -trainer_population_monitor <file>                 - CSV of every trainer's epochs (steps unit: and of the tournaments inside them), written by rank 0 of the job (%d in the name: one file per trainer)

  Notes:
  The trainers are alike (the same program and options): the same Net and rank count, so rank r of one trainer holds
  the same slice of the parameters as rank r of another, and models move with one MPI_Sendrecv between them. The
  population needs mini-batch training (a full-batch TaoSolve() spans every epoch with its memory of the iterates);
  early stopping is refused in a population for now. -trainer_checkpoint NAME and -trainer_restart NAME are trainer k's
  own file NAME.k (or NAME with its %d replaced by k). See the manual's chapter on training,
  "Population training", and the opening comment of src/trainer/population.c.

  Level: intermediate

.seealso: `TrainerPopulationSplit()`, `TrainerGetPopulation()`, `TrainerPopulationGetResults()`, `TrainerSetFromOptions()`
@*/
PetscErrorCode TrainerSetPopulation(Trainer tr, MPI_Comm comm)
{
  MPI_Comm          tcomm;
  PetscMPIInt       size, rank, tsize, trank;
  PetscInt          k, kmin, kmax, bad;
  TrainerPopulation pop;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  tcomm = PetscObjectComm((PetscObject)tr);
  PetscCheck(!tr->setupcalled, tcomm, PETSC_ERR_ORDER, "Call TrainerSetPopulation() before TrainerSetUp()");
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  PetscCallMPI(MPI_Comm_size(tcomm, &tsize));
  PetscCallMPI(MPI_Comm_rank(tcomm, &trank));
  bad = size % tsize || trank != rank % tsize ? 1 : 0;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bad, 1, MPIU_INT, MPI_MAX, comm));
  k = rank / tsize;
  PetscCall(MPIU_Allreduce(&k, &kmin, 1, MPIU_INT, MPI_MIN, tcomm));
  PetscCall(MPIU_Allreduce(&k, &kmax, 1, MPIU_INT, MPI_MAX, tcomm));
  bad = bad || kmin != kmax;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bad, 1, MPIU_INT, MPI_MAX, comm));
  PetscCheck(!bad, comm, PETSC_ERR_ARG_INCOMP,
             "The Trainer's communicator (%d ranks) is not one of the equal consecutive pieces of the %d ranks given to TrainerSetPopulation(): create the Trainer on the communicator TrainerPopulationSplit() returns", tsize, size);
  PetscCall(TrainerPopulationDestroy_Private(tr));
  PetscCall(PetscNew(&pop));
  PetscCall(PetscCommDuplicate(comm, &pop->comm, NULL));
  pop->rank      = rank;
  pop->size      = size;
  pop->P         = tsize;
  pop->K         = size / tsize;
  pop->k         = k;
  pop->data      = POP_DATA_DISJOINT;
  pop->tsamples  = PETSC_DECIDE;
  pop->interval  = 1;
  pop->unit      = POP_UNIT_EPOCHS;
  pop->metric    = POP_METRIC_LOSS;
  pop->exchange  = POP_EXCHANGE_PARAMETERS;
  pop->partner   = -1;
  pop->laststep  = -1;
  pop->winner    = -1;
  tr->population = pop;
  PetscFunctionReturn(0);
}

/*@
  TrainerGetPopulation - tells which trainer of its population a Trainer is

  Not collective

  Input Parameter:
. tr - the Trainer

  Output Parameters:
+ k - this trainer, 0 <= k < K (0 without a population) (may be NULL)
- K - the number of trainers (1 without a population) (may be NULL)

  Level: intermediate

.seealso: `TrainerSetPopulation()`, `TrainerPopulationSplit()`
@*/
PetscErrorCode TrainerGetPopulation(Trainer tr, PetscInt *k, PetscInt *K)
{
  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  if (k) *k = tr->population ? tr->population->k : 0;
  if (K) *K = tr->population ? tr->population->K : 1;
  PetscFunctionReturn(0);
}

/*@
  TrainerPopulationGetResults - the outcome of a population's training, the same on every rank of the job

  Not collective

  Input Parameter:
. tr - the Trainer, after TrainerTrain()

  Output Parameters:
+ winner    - the trainer with the best score on its own tournament set at the end (may be NULL)
. exchanges - the models taken by a trainer from its partner, over all tournaments and trainers (may be NULL)
. lr        - the winner's learning rate (base rate, before the schedule) (may be NULL)
- testacc   - the winner's test accuracy (-1 without a test set) (may be NULL)

  Level: intermediate

.seealso: `TrainerSetPopulation()`, `TrainerTrain()`, `TrainerGetResults()`
@*/
PetscErrorCode TrainerPopulationGetResults(Trainer tr, PetscInt *winner, PetscInt *exchanges, PetscReal *lr, PetscReal *testacc)
{
  TrainerPopulation pop;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(tr, TRAINER_CLASSID, 1);
  pop = tr->population;
  PetscCheck(pop && pop->finished, PetscObjectComm((PetscObject)tr), PETSC_ERR_ORDER, "TrainerPopulationGetResults() needs a Trainer of a population (TrainerSetPopulation()) after TrainerTrain()");
  if (winner) *winner = pop->winner;
  if (exchanges) *exchanges = pop->totalexchanges;
  if (lr) *lr = pop->winnerlr;
  if (testacc) *testacc = pop->winneracc;
  PetscFunctionReturn(0);
}

/* The getters and setters of the hyperparameters that are not one value of the Tao (Adam's betas, the schedules' second
   values, the Loss's smoothing); the others' are the Tao's public functions, in the table below */
static PetscErrorCode PopGetBeta1(Trainer tr, PetscReal *v)
{
  PetscFunctionBegin;
  PetscCall(PetNetTaoAdamGetBetas(tr->tao, v, NULL));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopSetBeta1(Trainer tr, PetscReal v)
{
  PetscReal beta2;

  PetscFunctionBegin;
  PetscCall(PetNetTaoAdamGetBetas(tr->tao, NULL, &beta2));
  PetscCall(PetNetTaoAdamSetBetas(tr->tao, v, beta2));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopGetBeta2(Trainer tr, PetscReal *v)
{
  PetscFunctionBegin;
  PetscCall(PetNetTaoAdamGetBetas(tr->tao, NULL, v));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopSetBeta2(Trainer tr, PetscReal v)
{
  PetscReal beta1;

  PetscFunctionBegin;
  PetscCall(PetNetTaoAdamGetBetas(tr->tao, &beta1, NULL));
  PetscCall(PetNetTaoAdamSetBetas(tr->tao, beta1, v));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopGetGamma(Trainer tr, PetscReal *v)
{
  PetscFunctionBegin;
  PetscCall(PetNetTaoGetLRStep(tr->tao, NULL, v));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopSetGamma(Trainer tr, PetscReal v)
{
  PetscInt stepsize;

  PetscFunctionBegin;
  PetscCall(PetNetTaoGetLRStep(tr->tao, &stepsize, NULL));
  PetscCall(PetNetTaoSetLRStep(tr->tao, stepsize, v));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopGetLRMin(Trainer tr, PetscReal *v)
{
  PetscFunctionBegin;
  PetscCall(PetNetTaoGetLRCosine(tr->tao, NULL, v));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopSetLRMin(Trainer tr, PetscReal v)
{
  PetscInt its;

  PetscFunctionBegin;
  PetscCall(PetNetTaoGetLRCosine(tr->tao, &its, NULL));
  PetscCall(PetNetTaoSetLRCosine(tr->tao, its, v));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopGetSmoothing(Trainer tr, PetscReal *v)
{
  PetscFunctionBegin;
  PetscCall(LossCrossEntropyGetLabelSmoothing(tr->loss, NULL, v));
  PetscFunctionReturn(0);
}
static PetscErrorCode PopSetSmoothing(Trainer tr, PetscReal v)
{
  PetscFunctionBegin;
  PetscCall(LossCrossEntropySetLabelSmoothing(tr->loss, v));
  PetscFunctionReturn(0);
}

/* Every searchable hyperparameter, in slot order: lr and wd first (slots 0 and 1, whose explore draws keep the place they
   had before the other names existed), then the TAO types' own, then the schedule's (every PetNet optimizer: gamma
   acts with -tao_lr_schedule step, lr_min with cosine), then the loss's. A name appears once per TAO type. */
static const PopHyperKind PopHyperKinds[] = {
    {"lr", "learning rate", "PetNetTaoGetLearningRate_C", PetNetTaoGetLearningRate, PetNetTaoSetLearningRate, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"wd", "weight decay", "PetNetTaoGetWeightDecay_C", PetNetTaoGetWeightDecay, PetNetTaoSetWeightDecay, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"momentum", "sgd's momentum", "PetNetTaoSGDGetMomentum_C", PetNetTaoSGDGetMomentum, PetNetTaoSGDSetMomentum, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"dampening", "sgd's dampening", "PetNetTaoSGDGetDampening_C", PetNetTaoSGDGetDampening, PetNetTaoSGDSetDampening, NULL, NULL, 0, 1, PETSC_FALSE, PETSC_FALSE, -1},
    {"beta1", "Adam's decay of the first moment", "PetNetTaoAdamGetBetas_C", NULL, NULL, PopGetBeta1, PopSetBeta1, 0, 1, PETSC_FALSE, PETSC_TRUE, -1},
    {"beta2", "Adam's decay of the second moment", "PetNetTaoAdamGetBetas_C", NULL, NULL, PopGetBeta2, PopSetBeta2, 0, 1, PETSC_FALSE, PETSC_TRUE, -1},
    {"eps", "Adam's eps", "PetNetTaoAdamGetEpsilon_C", PetNetTaoAdamGetEpsilon, PetNetTaoAdamSetEpsilon, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"alpha", "RMSprop's smoothing constant", "PetNetTaoRMSpropGetAlpha_C", PetNetTaoRMSpropGetAlpha, PetNetTaoRMSpropSetAlpha, NULL, NULL, 0, 1, PETSC_FALSE, PETSC_FALSE, -1},
    {"eps", "RMSprop's eps", "PetNetTaoRMSpropGetEpsilon_C", PetNetTaoRMSpropGetEpsilon, PetNetTaoRMSpropSetEpsilon, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"momentum", "RMSprop's momentum", "PetNetTaoRMSpropGetMomentum_C", PetNetTaoRMSpropGetMomentum, PetNetTaoRMSpropSetMomentum, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"damping", "K-FAC's damping", "PetNetTaoKFACGetDamping_C", PetNetTaoKFACGetDamping, PetNetTaoKFACSetDamping, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_TRUE, PETSC_FALSE, -1},
    {"stat_decay", "K-FAC's decay of the factors", "PetNetTaoKFACGetStatDecay_C", PetNetTaoKFACGetStatDecay, PetNetTaoKFACSetStatDecay, NULL, NULL, 0, 1, PETSC_FALSE, PETSC_TRUE, -1},
    {"momentum", "K-FAC's momentum", "PetNetTaoKFACGetMomentum_C", PetNetTaoKFACGetMomentum, PetNetTaoKFACSetMomentum, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"kl_clip", "K-FAC's KL clip", "PetNetTaoKFACGetKLClip_C", PetNetTaoKFACGetKLClip, PetNetTaoKFACSetKLClip, NULL, NULL, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, -1},
    {"gamma", "the step schedule's factor", "PetNetTaoGetLRStep_C", NULL, NULL, PopGetGamma, PopSetGamma, 0, PETSC_MAX_REAL, PETSC_TRUE, PETSC_FALSE, PETNET_LR_STEP},
    {"lr_min", "the cosine schedule's final rate", "PetNetTaoGetLRCosine_C", NULL, NULL, PopGetLRMin, PopSetLRMin, 0, PETSC_MAX_REAL, PETSC_FALSE, PETSC_FALSE, PETNET_LR_COSINE},
    {"smoothing", "the cross-entropy's label smoothing", "LossCrossEntropyGetLabelSmoothing_C", NULL, NULL, PopGetSmoothing, PopSetSmoothing, 0, 1, PETSC_FALSE, PETSC_TRUE, -1},
};

/* Hyperparameter slot h's value in trainer tr's Tao or Loss */
static PetscErrorCode PopHyperGet(Trainer tr, const PopHyperKind *kind, PetscReal *v)
{
  PetscFunctionBegin;
  if (kind->taoget)
    PetscCall(kind->taoget(tr->tao, v));
  else
    PetscCall(kind->get(tr, v));
  PetscFunctionReturn(0);
}

static PetscErrorCode PopHyperSet(Trainer tr, const PopHyperKind *kind, PetscReal v)
{
  PetscFunctionBegin;
  if (kind->taoset)
    PetscCall(kind->taoset(tr->tao, v));
  else
    PetscCall(kind->set(tr, v));
  PetscFunctionReturn(0);
}

/* The index of explore draw of trainer k's slot h in a tournament's draws [K * POP_MAXHYPER]: slots 0 and 1 (lr, wd)
   first as [K][2], then the others as [K][POP_MAXHYPER - 2], so that lr and wd draw what they drew before */
static inline PetscInt PopDrawIndex(PetscInt K, PetscInt k, PetscInt h)
{
  return h < 2 ? 2 * k + h : 2 * K + (POP_MAXHYPER - 2) * k + h - 2;
}

/* The request for name, made on first mention */
static PetscErrorCode PopGetRequest(TrainerPopulation pop, MPI_Comm comm, const char opt[], const char name[], PopRequest **req)
{
  size_t len;

  PetscFunctionBegin;
  *req = NULL;
  for (PetscInt i = 0; i < pop->nreq; i++)
    if (!strcmp(pop->req[i].name, name)) *req = &pop->req[i];
  if (*req) PetscFunctionReturn(0);
  PetscCall(PetscStrlen(name, &len));
  PetscCheck(len > 0 && len < POP_HYPER_LEN, comm, PETSC_ERR_ARG_WRONG, "%s: \"%s\" is not a hyperparameter's name: write e.g. lr:1e-4:1e-2:log (the names are in the manual's Population training)", opt, name);
  PetscCheck(pop->nreq < POP_NREQUEST, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: more than %d hyperparameters named", opt, POP_NREQUEST);
  *req = &pop->req[pop->nreq++];
  PetscCall(PetscMemzero(*req, sizeof(**req)));
  PetscCall(PetscStrncpy((*req)->name, name, sizeof((*req)->name)));
  (*req)->explore = strstr(opt, "_explore") ? PETSC_TRUE : PETSC_FALSE;
  PetscFunctionReturn(0);
}

/* -trainer_population_init "lr:1e-4:1e-2:log,wd:0:1e-3:lin": the names and ranges are checked against the TAO type at
   TrainerPopulationSetUp_Private() */
static PetscErrorCode PopParseInit(TrainerPopulation pop, MPI_Comm comm, const char opt[], char *spec)
{
  char *item = spec;

  PetscFunctionBegin;
  while (item && *item) {
    char       *next = strchr(item, ','), *field[5] = {NULL}, *c = item, *end;
    PetscInt    nf = 0;
    PopRequest *req;

    if (next) *next++ = 0;
    while (c && nf < 5) {
      field[nf++] = c;
      c           = strchr(c, ':');
      if (c) *c++ = 0;
    }
    PetscCheck(nf == 4 && !c, comm, PETSC_ERR_ARG_WRONG, "%s: \"%s...\" is not NAME:LO:HI:log|lin; write e.g. lr:1e-4:1e-2:log or beta1:0.8:0.95:lin, several separated by commas", opt, field[0]);
    PetscCall(PopGetRequest(pop, comm, opt, field[0], &req));
    req->lo = strtod(field[1], &end);
    PetscCheck(*field[1] && !*end, comm, PETSC_ERR_ARG_WRONG, "%s: the low end \"%s\" of %s is not a number: write e.g. %s:1e-4:1e-2:log", opt, field[1], req->name, req->name);
    req->hi = strtod(field[2], &end);
    PetscCheck(*field[2] && !*end, comm, PETSC_ERR_ARG_WRONG, "%s: the high end \"%s\" of %s is not a number: write e.g. %s:1e-4:1e-2:log", opt, field[2], req->name, req->name);
    PetscCheck(!strcmp(field[3], "log") || !strcmp(field[3], "lin"), comm, PETSC_ERR_ARG_WRONG, "%s: the scale \"%s\" of %s is neither log nor lin", opt, field[3], req->name);
    req->logscale = !strcmp(field[3], "log") ? PETSC_TRUE : PETSC_FALSE;
    PetscCheck(!PetscIsInfOrNanReal(req->lo) && !PetscIsInfOrNanReal(req->hi), comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: the range of %s is not finite", opt, req->name);
    PetscCheck(req->lo <= req->hi, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: the range of %s has min %g > max %g: give LO <= HI", opt, req->name, (double)req->lo, (double)req->hi);
    PetscCheck(!req->logscale || req->lo > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: a log range of %s needs LO > 0, not %g: use lin, or a positive LO", opt, req->name, (double)req->lo);
    req->init = PETSC_TRUE;
    item      = next;
  }
  PetscFunctionReturn(0);
}

/* -trainer_population_explore "lr:0.8,1.25,wd:0.5,2": a name starts a new list */
static PetscErrorCode PopParseExplore(TrainerPopulation pop, MPI_Comm comm, const char opt[], char *spec)
{
  char       *item = spec;
  PopRequest *req  = NULL;

  PetscFunctionBegin;
  while (item && *item) {
    char     *next = strchr(item, ','), *colon, *end;
    PetscReal f;

    if (next) *next++ = 0;
    colon = strchr(item, ':');
    if (colon) {
      *colon++ = 0;
      PetscCall(PopGetRequest(pop, comm, opt, item, &req));
      req->nfactors = 0;
      item          = colon;
    }
    PetscCheck(req, comm, PETSC_ERR_ARG_WRONG, "%s: \"%s\" comes before any NAME: write e.g. lr:0.8,1.25", opt, item);
    f = strtod(item, &end);
    PetscCheck(*item && !*end, comm, PETSC_ERR_ARG_WRONG, "%s: the factor \"%s\" of %s is not a number: write e.g. %s:0.8,1.25", opt, item, req->name, req->name);
    PetscCheck(f > 0 && !PetscIsInfOrNanReal(f), comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: the factor %g of %s must be > 0", opt, (double)f, req->name);
    PetscCheck(req->nfactors < POP_NFACTORS, comm, PETSC_ERR_ARG_OUTOFRANGE, "%s: more than %d factors for %s", opt, POP_NFACTORS, req->name);
    req->factors[req->nfactors++] = f;
    item                          = next;
  }
  PetscFunctionReturn(0);
}

/* The names this trainer's Tao and Loss have, for messages: "lr, wd, beta1, ..." */
static PetscErrorCode PopHyperNames(TrainerPopulation pop, char buf[], size_t size)
{
  size_t len;

  PetscFunctionBegin;
  buf[0] = 0;
  for (PetscInt h = 0; h < pop->nhyper; h++) {
    PetscCall(PetscStrlen(buf, &len));
    PetscCall(PetscSNPrintf(buf + len, size - len, "%s%s", h ? ", " : "", pop->hyper[h].kind->name));
  }
  if (!pop->nhyper) PetscCall(PetscStrncpy(buf, "none", size));
  PetscFunctionReturn(0);
}

/* The valid range of a hyperparameter as text, "[0, 1)" */
static PetscErrorCode PopRangeText(const PopHyperKind *kind, char buf[], size_t size)
{
  PetscFunctionBegin;
  if (kind->hi >= PETSC_MAX_REAL)
    PetscCall(PetscSNPrintf(buf, size, "%s%g, inf)", kind->loopen ? "(" : "[", (double)kind->lo));
  else
    PetscCall(PetscSNPrintf(buf, size, "%s%g, %g%s", kind->loopen ? "(" : "[", (double)kind->lo, (double)kind->hi, kind->hiopen ? ")" : "]"));
  PetscFunctionReturn(0);
}

/*
  The slots of this trainer: every hyperparameter its Tao and Loss have (PopHyperKinds order), each with its request;
  a request for a name they do not have is refused, naming the option, the TAO type and the names it has. An init range
  must lie inside the valid range. Explore values are clipped into [clo, chi]: the valid range, whose open end (beta1 < 1)
  is closed by the init range's end; an explore that could cross an open end with no init range to close it is refused.
*/
static PetscErrorCode PopHyperSetUp(Trainer tr)
{
  TrainerPopulation pop    = tr->population;
  MPI_Comm          comm   = PetscObjectComm((PetscObject)tr);
  const char       *prefix = ((PetscObject)tr)->prefix ? ((PetscObject)tr)->prefix : "";
  const char       *taotype, *losstype;
  char              names[256], range[64];
  PetNetTaoSettings settings;
  PetscBool         isoptim;

  PetscFunctionBegin;
  PetscCall(TaoGetType(tr->tao, &taotype));
  PetscCall(LossGetType(tr->loss, &losstype));
  PetscCall(PetNetTaoGetSettings(tr->tao, &isoptim, &settings));
  pop->nhyper = 0;
  for (size_t i = 0; i < sizeof(PopHyperKinds) / sizeof(PopHyperKinds[0]); i++) {
    const PopHyperKind *kind = &PopHyperKinds[i];
    PetscObject         obj  = strncmp(kind->query, "Loss", 4) ? (PetscObject)tr->tao : (PetscObject)tr->loss;
    void (*f)(void)          = NULL;

    PetscCall(PetscObjectQueryFunction(obj, kind->query, &f));
    if (!f || (kind->schedule >= 0 && (!isoptim || (PetscInt)settings.schedule != kind->schedule))) continue;
    PetscCheck(pop->nhyper < POP_MAXHYPER, comm, PETSC_ERR_PLIB, "More than %d hyperparameters: raise POP_MAXHYPER", POP_MAXHYPER);
    pop->hyper[pop->nhyper++] = (PopHyper){.kind = kind};
  }
  PetscCall(PopHyperNames(pop, names, sizeof(names)));
  for (PetscInt r = 0; r < pop->nreq; r++) {
    const PopRequest *req = &pop->req[r];
    PopHyper         *hp  = NULL;

    for (PetscInt h = 0; h < pop->nhyper; h++)
      if (!strcmp(pop->hyper[h].kind->name, req->name)) hp = &pop->hyper[h];
    PetscCheck(hp, comm, PETSC_ERR_ARG_WRONG, "-%strainer_population_%s %s: the TAO type %s (loss %s) has no hyperparameter \"%s\"; it has %s (and gamma with -tao_lr_schedule step, lr_min with cosine)", prefix, req->explore ? "explore" : "init",
               req->name, taotype, losstype, req->name, names);
    hp->req = req;
    hp->clo = hp->kind->lo;
    hp->chi = hp->kind->hi;
    PetscCall(PopRangeText(hp->kind, range, sizeof(range)));
    if (req->init) {
      const PopHyperKind *kind = hp->kind;

      PetscCheck(req->lo > kind->lo || (!kind->loopen && req->lo == kind->lo), comm, PETSC_ERR_ARG_OUTOFRANGE, "-%strainer_population_init %s:%g:%g: the range leaves the valid range %s of %s (%s): give a range inside it", prefix, req->name,
                 (double)req->lo, (double)req->hi, range, kind->what, req->name);
      PetscCheck(req->hi < kind->hi || (!kind->hiopen && req->hi == kind->hi), comm, PETSC_ERR_ARG_OUTOFRANGE, "-%strainer_population_init %s:%g:%g: the range leaves the valid range %s of %s (%s): give a range inside it", prefix, req->name,
                 (double)req->lo, (double)req->hi, range, kind->what, req->name);
      if (kind->loopen) hp->clo = req->lo;
      if (kind->hiopen) hp->chi = req->hi;
    }
    if (req->nfactors && !req->init) {
      PetscReal fmax = 0;

      for (PetscInt i = 0; i < req->nfactors; i++) fmax = PetscMax(fmax, req->factors[i]);
      PetscCheck(!hp->kind->hiopen || fmax <= 1, comm, PETSC_ERR_ARG_INCOMP,
                 "-%strainer_population_explore %s: the factor %g can take %s to %g or past it, outside its valid range %s, and no init range closes it: give -%strainer_population_init %s:LO:HI:lin too (HI < %g; explored values are clipped into "
                 "[LO, HI] at that end), or factors <= 1",
                 prefix, req->name, (double)fmax, req->name, (double)hp->kind->hi, range, prefix, req->name, (double)hp->kind->hi);
    }
  }
  PetscFunctionReturn(0);
}

/* Trainer k's value of slot h after an explore step: v times the factor drawn (u uniform in [0, 1)), clipped into
   [clo, chi]; *clipped says whether it was */
static PetscReal PopExplore(const PopHyper *hp, PetscReal v, PetscReal u, PetscBool *clipped)
{
  const PopRequest *req = hp->req;

  *clipped = PETSC_FALSE;
  if (!req || !req->nfactors) return v;
  v *= req->factors[PetscMin((PetscInt)(u * req->nfactors), req->nfactors - 1)];
  if (v > hp->chi) {
    v        = hp->chi;
    *clipped = PETSC_TRUE;
  }
  if (v < hp->clo) {
    v        = hp->clo;
    *clipped = PETSC_TRUE;
  }
  return v;
}

/* Called inside TrainerSetFromOptions()'s options block. Without a population, -trainer_population K > 1 is refused:
   this program made no sub-communicators. */
PetscErrorCode TrainerPopulationSetFromOptions_Private(Trainer tr, PetscOptionItems *PetscOptionsObject)
{
  TrainerPopulation pop  = tr->population;
  MPI_Comm          comm = PetscObjectComm((PetscObject)tr);
  PetscInt          K    = pop ? pop->K : 1;
  char              spec[1024], opt[256];
  const char       *prefix = ((PetscObject)tr)->prefix ? ((PetscObject)tr)->prefix : "";
  PetscBool         set;

  PetscFunctionBegin;
  PetscCall(PetNetOptionsBoundedInt("-trainer_population", "Trainers of the population (read by TrainerPopulationSplit(); they divide the ranks)", "TrainerPopulationSplit", K, &K, &set, 1));
  if (!pop) {
    PetscCheck(!set || K == 1, comm, PETSC_ERR_ARG_INCOMP,
               "-%strainer_population %" PetscInt_FMT
               ": this program made one Trainer on all its ranks; a population needs a program that creates its trainers on sub-communicators (TrainerPopulationSplit(), TrainerSetPopulation()), such as bin/fashion",
               prefix, K);
    PetscFunctionReturn(0);
  }
  PetscCheck(!set || K == pop->K, comm, PETSC_ERR_ARG_INCOMP, "-%strainer_population %" PetscInt_FMT " differs from the %" PetscInt_FMT " trainers TrainerSetPopulation() found: split the communicator with the same option (TrainerPopulationSplit())",
             prefix, K, pop->K);
  PetscCall(PetscOptionsEnum("-trainer_population_data", "Training data of each trainer: disjoint (its shard) or shared (all)", "TrainerSetPopulation", PopDatas, (PetscEnum)pop->data, (PetscEnum *)&pop->data, NULL));
  PetscCall(PetNetOptionsBoundedInt("-trainer_tournament_samples", "Samples at the end of each trainer's shard held out as its tournament set (-1: a tenth of the shard)", "TrainerSetPopulation", pop->tsamples, &pop->tsamples, NULL, PETSC_DECIDE));
  PetscCheck(pop->tsamples != 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-%strainer_tournament_samples 0: a trainer scores the models on its tournament set, so give it at least 1 sample (-1: a tenth of the shard)", prefix);
  PetscCall(PetNetOptionsBoundedInt("-trainer_tournament_interval", "A tournament every N epochs (or optimizer steps: -trainer_tournament_unit)", "TrainerSetPopulation", pop->interval, &pop->interval, &set, PETSC_MIN_INT));
  PetscCall(PetscOptionsEnum("-trainer_tournament_unit", "What the interval counts: epochs, or optimizer steps (mini-batches, counted across epochs)", "TrainerSetPopulation", PopUnits, (PetscEnum)pop->unit, (PetscEnum *)&pop->unit, NULL));
  PetscCheck(pop->interval >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-%strainer_tournament_interval %" PetscInt_FMT ": give a number of %s >= 1 between tournaments (-%strainer_tournament_unit %s)", prefix, pop->interval,
             pop->unit == POP_UNIT_STEPS ? "optimizer steps" : "epochs", prefix, PopUnits[pop->unit]);
  PetscCall(PetscOptionsEnum("-trainer_tournament_metric", "Score of a model on the tournament set: loss (lower wins) or accuracy (higher wins)", "TrainerSetPopulation", PopMetrics, (PetscEnum)pop->metric, (PetscEnum *)&pop->metric, NULL));
  PetscCall(PetscOptionsEnum("-trainer_tournament_exchange", "What the trainers exchange: parameters, or the optimizer's state too", "TrainerSetPopulation", PopExchanges, (PetscEnum)pop->exchange, (PetscEnum *)&pop->exchange, NULL));
  PetscCall(PetNetOptionsBoundedInt("-trainer_population_seed", "Seed of the pairings and of the explore draws", "TrainerSetPopulation", pop->seed, &pop->seed, NULL, 0));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%strainer_population_init", prefix));
  spec[0] = 0;
  PetscCall(PetscOptionsString("-trainer_population_init",
                               "Initial hyperparameters spread over ranges: NAME:LO:HI:log|lin,... (NAME: lr, wd, gamma, lr_min, smoothing, the TAO type's own: momentum, dampening, beta1, beta2, eps, alpha, damping, stat_decay, kl_clip)",
                               "TrainerSetPopulation", spec, spec, sizeof(spec), &set));
  if (set) PetscCall(PopParseInit(pop, comm, opt, spec));
  PetscCall(PetscSNPrintf(opt, sizeof(opt), "-%strainer_population_explore", prefix));
  spec[0] = 0;
  PetscCall(PetscOptionsString("-trainer_population_explore", "Factors on the hyperparameters a trainer takes with a model: NAME:F1,F2,... (the names of -trainer_population_init; values clipped into the valid range)", "TrainerSetPopulation", spec,
                               spec, sizeof(spec), &set));
  if (set) PetscCall(PopParseExplore(pop, comm, opt, spec));
  PetscCall(PetscOptionsString("-trainer_population_monitor", "CSV of every trainer's epochs (rank 0 of the job writes it; %d in the name: one file per trainer)", "TrainerSetPopulation", pop->monitor, pop->monitor, sizeof(pop->monitor), NULL));
  PetscFunctionReturn(0);
}

/* A population's checkpoints: trainer k writes and restarts from its own file, NAME with its first %d replaced by k, or
   NAME.k; each file is a whole checkpoint of that trainer (its model, optimizer state, hyperparameters, run section) */
static PetscErrorCode PopTrainerFileFormat(const char name[], PetscInt k, char buf[], size_t size)
{
  const char *d = strstr(name, "%d");

  PetscFunctionBegin;
  if (d)
    PetscCall(PetscSNPrintf(buf, size, "%.*s%" PetscInt_FMT "%s", (int)(d - name), name, k, d + 2));
  else
    PetscCall(PetscSNPrintf(buf, size, "%s.%" PetscInt_FMT, name, k));
  PetscFunctionReturn(0);
}

/* the length is checked on the last trainer's name (the most digits), the same on every rank of the job: a name too
   long fails everywhere at once, never on one trainer's ranks while the others wait */
static PetscErrorCode PopTrainerFileName(MPI_Comm comm, char name[], size_t size, PetscInt k, PetscInt K)
{
  char   buf[PETSC_MAX_PATH_LEN + 32];
  size_t len;

  PetscFunctionBegin;
  if (!name[0]) PetscFunctionReturn(0);
  PetscCall(PopTrainerFileFormat(name, K - 1, buf, sizeof(buf)));
  PetscCall(PetscStrlen(buf, &len));
  PetscCheck(len < size, comm, PETSC_ERR_ARG_SIZ, "Trainer %" PetscInt_FMT "'s checkpoint file %s is longer than %zu characters: give -trainer_checkpoint a shorter name", K - 1, buf, size - 1);
  PetscCall(PopTrainerFileFormat(name, k, buf, sizeof(buf)));
  PetscCall(PetscStrncpy(name, buf, size));
  PetscFunctionReturn(0);
}

/* The shard and the tournament set (see the opening comment); called by TrainerSetUp() after the training Dataset's
   first set-up, which told the size N of the training set */
PetscErrorCode TrainerPopulationSetUpData_Private(Trainer tr)
{
  TrainerPopulation pop  = tr->population;
  MPI_Comm          comm = PetscObjectComm((PetscObject)tr);
  PetscInt          N, base, S, Nt, start;
  const char       *prefix = ((PetscObject)tr)->prefix ? ((PetscObject)tr)->prefix : "";

  PetscFunctionBegin;
  if (!pop->named) { /* once: TrainerSetUp() may run again */
    PetscCall(PopTrainerFileName(pop->comm, tr->checkpoint, sizeof(tr->checkpoint), pop->k, pop->K));
    PetscCall(PopTrainerFileName(pop->comm, tr->restart, sizeof(tr->restart), pop->k, pop->K));
    pop->named = PETSC_TRUE;
  }
  PetscCall(DatasetGetSize(tr->train, &N));
  PetscCall(DatasetGetOffset(tr->train, &base));
  S = pop->data == POP_DATA_DISJOINT ? N / pop->K : N;
  PetscCheck(S >= 2, comm, PETSC_ERR_ARG_INCOMP,
             "The training set's %" PetscInt_FMT " samples make shards of %" PetscInt_FMT " for %" PetscInt_FMT " trainers (-%strainer_population_data %s): each needs at least 2 (one to train on, one for its tournament set)", N, S, pop->K, prefix,
             PopDatas[pop->data]);
  Nt = pop->tsamples == PETSC_DECIDE ? PetscMax(1, S / 10) : pop->tsamples;
  PetscCheck(Nt < S, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-%strainer_tournament_samples %" PetscInt_FMT " leaves no training samples in trainer %" PetscInt_FMT "'s shard of %" PetscInt_FMT " samples (%" PetscInt_FMT " training samples%s%" PetscInt_FMT
             " trainers): give fewer than %" PetscInt_FMT,
             prefix, Nt, pop->k, S, N, pop->data == POP_DATA_DISJOINT ? " / " : ", shared by ", pop->K, S);
  start           = pop->data == POP_DATA_DISJOINT ? pop->k * S : 0;
  pop->shardstart = base + start;
  pop->shardsize  = S;
  pop->tsamples   = Nt;
  PetscCall(DatasetDestroy(&pop->tournament));
  PetscCall(DatasetCreateSubset(tr->train, start + S - Nt, Nt, &pop->tournament));
  PetscCall(DatasetSetOffset(tr->train, base + start));
  PetscCall(DatasetSetLimit(tr->train, S - Nt));
  PetscCall(DatasetSetUp(tr->train));
  PetscFunctionReturn(0);
}

/* Checks and initial hyperparameters; called by TrainerSetUp() once the mode and the Tao are known */
PetscErrorCode TrainerPopulationSetUp_Private(Trainer tr)
{
  TrainerPopulation pop    = tr->population;
  MPI_Comm          comm   = PetscObjectComm((PetscObject)tr);
  const char       *prefix = ((PetscObject)tr)->prefix ? ((PetscObject)tr)->prefix : "";
  PetscInt          classes;

  PetscFunctionBegin;
  PetscCheck(tr->minibatch, comm, PETSC_ERR_SUP,
             "A population trains in mini-batch mode (sgd, adam, adamw, rmsprop, kfac): a full-batch TaoSolve() spans every epoch with its memory of the iterates, which a tournament would replace under it. Give -tao_type adam (or sgd, ...)");
  PetscCheck(tr->patience == 0, comm, PETSC_ERR_SUP, "-%strainer_patience %" PetscInt_FMT ": early stopping would stop the trainers of a population at different epochs, and the tournaments need them all: drop it", prefix, tr->patience);
  PetscCall(DatasetGetNumClasses(pop->tournament, &classes));
  PetscCheck(pop->metric == POP_METRIC_LOSS || classes > 0, comm, PETSC_ERR_ARG_INCOMP, "-%strainer_tournament_metric accuracy needs class labels, but the training data are regression targets: use -%strainer_tournament_metric loss", prefix, prefix);
  PetscCall(PopHyperSetUp(tr));
  for (PetscInt h = 0; h < pop->nhyper; h++) {
    PopHyper         *hp  = &pop->hyper[h];
    const PopRequest *req = hp->req;

    if (req && req->init) {
      PetscReal x = pop->K > 1 ? (PetscReal)pop->k / (pop->K - 1) : 0;

      hp->value = req->logscale ? req->lo * PetscPowReal(req->hi / req->lo, x) : req->lo + (req->hi - req->lo) * x;
      PetscCall(PopHyperSet(tr, hp->kind, hp->value));
    } else
      PetscCall(PopHyperGet(tr, hp->kind, &hp->value));
  }
  if (pop->exchange == POP_EXCHANGE_STATE || tr->checkpoint[0]) {
    /* a momentum spread from 0 keeps no buffer on trainer 0: the states differ, so they cannot be exchanged; and a
       trainer that takes a momentum > 0 grows a buffer mid-run, which its restart (momentum 0 at set-up) lacks */
    PetscInt nstate, range[2];

    PetscCall(PetNetTaoGetState(tr->tao, &nstate, NULL, NULL));
    range[0] = nstate;
    range[1] = -nstate;
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, range, 2, MPIU_INT, MPI_MIN, pop->comm));
    PetscCheck(range[0] == -range[1], pop->comm, PETSC_ERR_ARG_INCOMP,
               "-%s%s: the trainers' optimizers hold %" PetscInt_FMT " to %" PetscInt_FMT " state Vecs after -%strainer_population_init (a momentum of 0 keeps no momentum buffer), so %s: start the momentum's range above 0 (e.g. 0.1)", prefix,
               pop->exchange == POP_EXCHANGE_STATE ? "trainer_tournament_exchange state" : "trainer_checkpoint", range[0], -range[1], prefix,
               pop->exchange == POP_EXCHANGE_STATE ? "their states cannot be exchanged" : "a trainer that takes a momentum > 0 would grow a buffer that its restart cannot match");
  }
  pop->nbatches = tr->nbatches;
  if (pop->unit == POP_UNIT_STEPS) { /* the tournaments fall after the same global step on every trainer only if they all step alike */
    PetscInt b[2] = {tr->nbatches, -tr->nbatches}, r[2];

    PetscCall(MPIU_Allreduce(b, r, 2, MPIU_INT, MPI_MIN, pop->comm));
    PetscCheck(r[0] == -r[1], pop->comm, PETSC_ERR_ARG_INCOMP,
               "-%strainer_tournament_unit steps: the trainers take different numbers of optimizer steps per epoch (%" PetscInt_FMT " to %" PetscInt_FMT " mini-batches; trainer %" PetscInt_FMT " takes %" PetscInt_FMT
               "), so the tournaments (-%strainer_tournament_interval %" PetscInt_FMT
               ") would pair trainers at different points of their epochs: give every trainer the same shard size and batch size (-%strainer_batch_size), or count the interval in epochs (-%strainer_tournament_unit epochs)",
               prefix, r[0], -r[1], pop->k, tr->nbatches, prefix, pop->interval, prefix, prefix);
  }
  if (pop->k > 0) tr->monitordefault = PETSC_FALSE; /* one progress line per epoch: trainer 0's; the others are in the tournament lines and the CSV */
  PetscCall(VecDestroy(&pop->keep));
  PetscCall(VecDuplicate(tr->theta, &pop->keep));
  if (pop->monitor[0] && pop->rank == 0) {
    PetscBool perfile;
    PetscInt  nfiles;

    perfile = strstr(pop->monitor, "%d") ? PETSC_TRUE : PETSC_FALSE;
    nfiles  = perfile ? pop->K : 1;
    PetscCall(PetscCalloc1(pop->K, &pop->files));
    for (PetscInt i = 0; i < nfiles; i++) {
      char name[PETSC_MAX_PATH_LEN + 32];

      if (perfile)
        PetscCall(PetscSNPrintf(name, sizeof(name), pop->monitor, (int)i));
      else
        PetscCall(PetscStrncpy(name, pop->monitor, sizeof(name)));
      PetscCall(PetscFOpen(PETSC_COMM_SELF, name, "w", &pop->files[i]));
      PetscCall(PetscFPrintf(PETSC_COMM_SELF, pop->files[i], "trainer,epoch,%strain_loss,test_loss,test_accuracy,lr,", pop->unit == POP_UNIT_STEPS ? "step," : ""));
      for (PetscInt h = 1; h < pop->nhyper; h++)
        if (pop->hyper[h].req) PetscCall(PetscFPrintf(PETSC_COMM_SELF, pop->files[i], "%s,", pop->hyper[h].kind->name));
      PetscCall(PetscFPrintf(PETSC_COMM_SELF, pop->files[i], "tournament,partner,own_metric,partner_metric,took_partner,diverged\n"));
    }
  }
  PetscFunctionReturn(0);
}

/* The divergence test found NaN, Inf or an explosion: inside a population of more than one trainer the trainer is
   flagged (its partner's model replaces it at the next tournament) instead of stopping the job */
PetscErrorCode TrainerPopulationDiverged_Private(Trainer tr, const char what[], PetscBool *handled)
{
  TrainerPopulation pop = tr->population;

  PetscFunctionBegin;
  *handled = pop && pop->K > 1 ? PETSC_TRUE : PETSC_FALSE;
  if (!*handled) PetscFunctionReturn(0);
  if (!pop->diverged) PetscCall(PetscInfo(tr, "Trainer %" PetscInt_FMT " diverged (%s): its partner's model replaces it at the next tournament\n", pop->k, what));
  pop->diverged = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/* The metric of the Net's current parameters on the own tournament set (evaluation mode, the cross-entropy without
   label smoothing) and its score (higher is better; a NaN or Inf loss scores worst) */
static PetscErrorCode PopScore(Trainer tr, PetscReal *metric, PetscReal *score)
{
  TrainerPopulation pop = tr->population;
  PetscBool         training, smoothed;
  PetscInt          correct = 0, N;
  PetscReal         f, smoothing = 0;

  PetscFunctionBegin;
  PetscCall(LossCrossEntropyGetLabelSmoothing(tr->loss, &smoothed, &smoothing));
  if (smoothed && smoothing != 0) PetscCall(LossCrossEntropySetLabelSmoothing(tr->loss, 0)); /* the plain loss: trainers with other smoothings compare fairly */
  PetscCall(NetGetTraining(tr->net, &training));
  PetscCall(NetSetTraining(tr->net, PETSC_FALSE));
  PetscCall(TrainerAccumulate_Private(tr, pop->tournament, &f, NULL, pop->metric == POP_METRIC_ACCURACY ? &correct : NULL, NULL));
  PetscCall(NetSetTraining(tr->net, training));
  if (smoothed && smoothing != 0) PetscCall(LossCrossEntropySetLabelSmoothing(tr->loss, smoothing));
  PetscCall(DatasetGetSize(pop->tournament, &N));
  *metric = pop->metric == POP_METRIC_LOSS ? f : (PetscReal)correct / N;
  *score  = PetscIsInfOrNanReal(f) ? PETSC_MIN_REAL : (pop->metric == POP_METRIC_LOSS ? -f : *metric);
  PetscFunctionReturn(0);
}

/* The pairing of tournament t: perm, a permutation of 0..K-1, and draws[K * POP_MAXHYPER] uniform numbers for the
   explore factors (PopDrawIndex()), from PETSCRAND48 seeded with (seed, t): the same on every rank and for every rank
   count */
static PetscErrorCode PopDraw(TrainerPopulation pop, PetscInt t, PetscInt *perm, PetscReal *draws)
{
  PetscRandom rnd;

  PetscFunctionBegin;
  PetscCall(PetscRandomCreate(PETSC_COMM_SELF, &rnd));
  PetscCall(PetscRandomSetType(rnd, PETSCRAND48));
  PetscCall(PetscRandomSetSeed(rnd, (unsigned long)(1000003 * pop->seed + t + 1)));
  PetscCall(PetscRandomSeed(rnd));
  for (PetscInt i = 0; i < pop->K; i++) perm[i] = i;
  for (PetscInt i = pop->K - 1; i > 0; i--) { /* Fisher-Yates */
    PetscReal u;
    PetscInt  j, swap;

    PetscCall(PetscRandomGetValueReal(rnd, &u));
    j       = PetscMin((PetscInt)(u * (i + 1)), i);
    swap    = perm[i];
    perm[i] = perm[j];
    perm[j] = swap;
  }
  for (PetscInt i = 0; i < pop->K * POP_MAXHYPER; i++) PetscCall(PetscRandomGetValueReal(rnd, &draws[i]));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscFunctionReturn(0);
}

/* The Net's buffers (non-trainable state of its nodes, e.g. batchnorm's running statistics; replicated on the ranks
   of a trainer) packed into buf [nb] (buf NULL: only count them), or unpacked from it (unpack) */
static PetscErrorCode PopBuffers(Trainer tr, PetscScalar *buf, PetscBool unpack, PetscInt *nb)
{
  PetscInt nl;

  PetscFunctionBegin;
  *nb = 0;
  PetscCall(NetGetNumLayers(tr->net, &nl));
  for (PetscInt l = 0; l < nl; l++) {
    Layer layer;

    PetscCall(NetGetLayer(tr->net, l, &layer));
    if (!layer->nbuffers || !layer->buffers) continue;
    if (buf && unpack)
      PetscCall(PetscArraycpy(layer->buffers, buf + *nb, layer->nbuffers));
    else if (buf)
      PetscCall(PetscArraycpy(buf + *nb, layer->buffers, layer->nbuffers));
    *nb += layer->nbuffers;
  }
  PetscFunctionReturn(0);
}

/* MPI_Sendrecv of n scalars with the same rank of the partner trainer, in messages of at most 2^30 entries */
static PetscErrorCode PopSendrecv(TrainerPopulation pop, PetscMPIInt other, const PetscScalar *send, PetscScalar *recv, PetscInt64 n)
{
  const PetscInt64 chunk = (PetscInt64)1 << 30;

  PetscFunctionBegin;
  for (PetscInt64 i = 0; i < n; i += chunk) {
    PetscMPIInt m;

    PetscCall(PetscMPIIntCast(PetscMin(chunk, n - i), &m));
    PetscCallMPI(MPI_Sendrecv(send + i, m, MPIU_SCALAR, other, 33, recv + i, m, MPIU_SCALAR, other, 33, pop->comm, MPI_STATUS_IGNORE));
  }
  PetscFunctionReturn(0);
}

static PetscErrorCode PopMonitorRows(Trainer, PetscInt, PetscInt, PetscBool, PetscBool);

/* A tournament (see the opening comment), in epoch 'epoch' (1-based): at its end in the epochs unit (gstep -1), after
   global optimizer step gstep (= (epoch - 1) B + batch, B batches per epoch) in the steps unit. Collective on the job. */
static PetscErrorCode PopTournament(Trainer tr, PetscInt epoch, PetscInt gstep, PetscInt batch)
{
  TrainerPopulation pop = tr->population;
  MPI_Comm          comm;
  PetscInt          K, t, p = -1, *perm, nstate = 0, step = 0, n, nb, bad;
  PetscReal        *draws, ownscore, partscore = PETSC_MIN_REAL, *report = NULL, mine[POP_REPORT] = {0};
  Vec              *state = NULL;
  PetscBool         wasdiverged, adopt = PETSC_FALSE;
  char              line[8192] = "";

  PetscFunctionBegin;
  comm          = pop->comm;
  K             = pop->K;
  t             = pop->ntournaments++;
  pop->laststep = gstep;
  PetscCall(PetscMalloc2(K, &perm, K * POP_MAXHYPER, &draws));
  PetscCall(PopDraw(pop, t, perm, draws));
  for (PetscInt i = 0; i + 1 < K; i += 2) {
    if (perm[i] == pop->k) p = perm[i + 1];
    if (perm[i + 1] == pop->k) p = perm[i];
  }
  wasdiverged = pop->diverged;
  PetscCall(NetSetParameters(tr->net, tr->theta));
  PetscCall(PopScore(tr, &pop->ownmetric, &ownscore));
  if (wasdiverged) ownscore = PETSC_MIN_REAL;
  pop->partner    = p;
  pop->partmetric = PETSC_MAX_REAL;
  pop->adopted    = PETSC_FALSE;
  PetscCall(PetNetTaoGetState(tr->tao, &nstate, &state, &step));
  if (pop->exchange == POP_EXCHANGE_PARAMETERS) nstate = 0;
  PetscCall(VecGetLocalSize(tr->theta, &n));
  PetscCall(PopBuffers(tr, NULL, PETSC_FALSE, &nb));
  { /* the header first: the layouts must agree on every rank of both trainers, or nobody exchanges */
    PetscScalar hdr[POP_HEADER] = {(PetscScalar)n, (PetscScalar)nstate, (PetscScalar)step, (PetscScalar)(wasdiverged ? 1 : 0), (PetscScalar)nb, (PetscScalar)pop->nhyper}, phdr[POP_HEADER];
    PetscMPIInt other           = (PetscMPIInt)(p * pop->P + pop->rank % pop->P);

    for (PetscInt h = 0; h < pop->nhyper; h++) hdr[6 + h] = pop->hyper[h].value;
    bad = 0;
    if (p >= 0) {
      PetscCall(PopSendrecv(pop, other, hdr, phdr, POP_HEADER));
      bad = PetscRealPart(phdr[0]) != n || PetscRealPart(phdr[1]) != nstate || PetscRealPart(phdr[4]) != nb || PetscRealPart(phdr[5]) != pop->nhyper ? 1 : 0;
    }
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bad, 1, MPIU_INT, MPI_MAX, comm));
    PetscCheck(!bad, comm, PETSC_ERR_ARG_INCOMP,
               "Tournament %" PetscInt_FMT ": two trainers hold their parameters (or optimizer state, or hyperparameters) in different layouts, so their models cannot be exchanged rank by rank: the trainers of a population must be alike (the same "
               "Net, rank count, parallel mode and optimizer)",
               t + 1);
    if (p >= 0) {
      PetscInt64   len = (PetscInt64)n * (1 + nstate) + nb, off = len - nb;
      PetscScalar *send, *recv, *a, *ownbuf;

      PetscCall(PetscMalloc3(len, &send, len, &recv, nb, &ownbuf));
      PetscCall(PopBuffers(tr, send + off, PETSC_FALSE, &nb));
      PetscCall(PetscArraycpy(ownbuf, send + off, nb));
      PetscCall(VecGetArray(tr->theta, &a));
      PetscCall(PetscArraycpy(send, a, n));
      PetscCall(VecRestoreArray(tr->theta, &a));
      for (PetscInt s = 0; s < nstate; s++) {
        const PetscScalar *b;

        PetscCall(VecGetArrayRead(state[s], &b));
        PetscCall(PetscArraycpy(send + (s + 1) * (PetscInt64)n, b, n));
        PetscCall(VecRestoreArrayRead(state[s], &b));
      }
      PetscCall(PopSendrecv(pop, other, send, recv, len));
      /* score the partner's model on the own tournament set */
      PetscCall(VecCopy(tr->theta, pop->keep));
      PetscCall(VecGetArray(tr->theta, &a));
      PetscCall(PetscArraycpy(a, recv, n));
      PetscCall(VecRestoreArray(tr->theta, &a));
      PetscCall(PopBuffers(tr, recv + off, PETSC_TRUE, &nb));
      PetscCall(NetSetParameters(tr->net, tr->theta));
      PetscCall(PopScore(tr, &pop->partmetric, &partscore));
      if (PetscRealPart(phdr[3]) != 0) partscore = PETSC_MIN_REAL;
      adopt = partscore > ownscore ? PETSC_TRUE : PETSC_FALSE; /* a tie keeps the own model */
      if (adopt) {
        for (PetscInt s = 0; s < nstate; s++) {
          PetscScalar *b;

          PetscCall(VecGetArray(state[s], &b));
          PetscCall(PetscArraycpy(b, recv + (s + 1) * (PetscInt64)n, n));
          PetscCall(VecRestoreArray(state[s], &b));
        }
        if (nstate)
          PetscCall(PetNetTaoSetStep(tr->tao, (PetscInt)PetscRealPart(phdr[2])));
        else if (wasdiverged) { /* the own moments hold NaN: start them afresh, keep the step count (the schedule) */
          PetscCall(PetNetTaoResetState(tr->tao));
          PetscCall(PetNetTaoSetStep(tr->tao, step));
        }
        for (PetscInt h = 0; h < pop->nhyper; h++) { /* the partner's values, times the explore factors, clipped */
          PopHyper *hp = &pop->hyper[h];

          hp->value = PopExplore(hp, PetscRealPart(phdr[6 + h]), draws[PopDrawIndex(K, pop->k, h)], &hp->clipped);
          PetscCall(PopHyperSet(tr, hp->kind, hp->value));
        }
        pop->adopted  = PETSC_TRUE;
        pop->diverged = PETSC_FALSE;
        pop->exchanges++;
        if (wasdiverged) pop->replaced++;
      } else {
        PetscCall(VecCopy(pop->keep, tr->theta));
        PetscCall(PopBuffers(tr, ownbuf, PETSC_TRUE, &nb));
        PetscCall(NetSetParameters(tr->net, tr->theta));
      }
      PetscCall(PetscFree3(send, recv, ownbuf));
    }
  }
  /* the report: rank 0 of each trainer's line, gathered on rank 0 of the job */
  mine[0] = pop->k;
  mine[1] = p;
  mine[2] = pop->ownmetric;
  mine[3] = pop->partmetric;
  mine[4] = adopt;
  mine[5] = wasdiverged;
  mine[6] = pop->diverged;
  mine[7] = 0; /* the slots the explore step clipped, a bit each */
  for (PetscInt h = 0; h < pop->nhyper; h++) {
    if (adopt && pop->hyper[h].clipped) mine[7] += (PetscReal)(1 << h);
    mine[8 + h] = pop->hyper[h].value;
  }
  if (pop->rank == 0) PetscCall(PetscMalloc1((size_t)pop->size * POP_REPORT, &report));
  PetscCallMPI(MPI_Gather(mine, POP_REPORT, MPIU_REAL, report, POP_REPORT, MPIU_REAL, 0, comm));
  if (pop->rank == 0) {
    size_t len;

    if (pop->nparent < (t + 1) * K) {
      PetscInt *parent, *tepoch, *tstep, nnew = PetscMax(2 * pop->nparent, (t + 1) * K);

      PetscCall(PetscMalloc3(nnew, &parent, nnew / K + 1, &tepoch, nnew / K + 1, &tstep));
      if (pop->nparent) {
        PetscCall(PetscArraycpy(parent, pop->parent, t * K));
        PetscCall(PetscArraycpy(tepoch, pop->tepoch, t));
        PetscCall(PetscArraycpy(tstep, pop->tstep, t));
      }
      PetscCall(PetscFree3(pop->parent, pop->tepoch, pop->tstep));
      pop->parent  = parent;
      pop->tepoch  = tepoch;
      pop->tstep   = tstep;
      pop->nparent = nnew;
    }
    pop->tepoch[t] = epoch;
    pop->tstep[t]  = gstep;
    if (pop->unit == POP_UNIT_STEPS)
      PetscCall(PetscSNPrintf(line, sizeof(line), "tournament %" PetscInt_FMT " step %" PetscInt_FMT " (epoch %" PetscInt_FMT ", after batch %" PetscInt_FMT "/%" PetscInt_FMT "; %s on each trainer's own tournament set, own vs partner's):", t + 1,
                              gstep, epoch, batch, pop->nbatches, PopMetrics[pop->metric]));
    else
      PetscCall(PetscSNPrintf(line, sizeof(line), "tournament %" PetscInt_FMT " epoch %" PetscInt_FMT " (%s on each trainer's own tournament set, own vs partner's):", t + 1, epoch, PopMetrics[pop->metric]));
    for (PetscInt i = 0; i + 1 < K; i += 2) {
      PetscCall(PetscStrlen(line, &len));
      PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, "%s %" PetscInt_FMT "-%" PetscInt_FMT, i ? "," : "", perm[i], perm[i + 1]));
    }
    for (PetscInt i = 0; i < K; i++) {
      const PetscReal *r = report + (size_t)i * pop->P * POP_REPORT;
      PetscInt         q = (PetscInt)r[1];

      pop->parent[t * K + i] = r[4] != 0 ? q : i;
      PetscCall(PetscStrlen(line, &len));
      if (q < 0) {
        PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " | %" PetscInt_FMT " sits out%s", i, r[6] != 0 ? " (diverged, waits for a partner)" : ""));
        continue;
      }
      PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, pop->metric == POP_METRIC_LOSS ? " | %" PetscInt_FMT ": %.6f vs %.6f %s %" PetscInt_FMT : " | %" PetscInt_FMT ": %.4f vs %.4f %s %" PetscInt_FMT, i, (double)r[2], (double)r[3],
                              r[4] != 0 ? (r[5] != 0 ? "diverged, replaced by" : "takes") : "keeps, against", q));
      for (PetscInt h = 0; h < pop->nhyper; h++) { /* lr, and every hyperparameter searched */
        if (h > 0 && !pop->hyper[h].req) continue;
        PetscCall(PetscStrlen(line, &len));
        PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " %s %.6g%s", pop->hyper[h].kind->name, (double)r[8 + h], ((PetscInt)r[7] >> h) & 1 ? " (clipped)" : ""));
      }
    }
    PetscCall(PetscFree(report));
  }
  PetscCall(PetscPrintf(comm, "%s\n", line));
  PetscCall(PetscFree2(perm, draws));
  if (gstep >= 0 && batch < pop->nbatches) PetscCall(PopMonitorRows(tr, epoch, gstep, PETSC_TRUE, PETSC_TRUE)); /* at an epoch's end: its row */
  PetscFunctionReturn(0);
}

/* Steps unit: the tournament after global step (epoch - 1) B + batch, if the interval says so and it has not run yet
   (the update hook before batch b and the skipped steps of a stopped solve both ask for it; a restart counts the
   tournaments before it) */
static PetscErrorCode PopStepTournament(Trainer tr, PetscInt epoch, PetscInt batch)
{
  TrainerPopulation pop   = tr->population;
  PetscInt          gstep = (epoch - 1) * pop->nbatches + batch;

  PetscFunctionBegin;
  if (gstep == 0 || gstep % pop->interval || pop->ntournaments >= gstep / pop->interval) PetscFunctionReturn(0);
  PetscCall(PopTournament(tr, epoch, gstep, batch));
  PetscFunctionReturn(0);
}

/* The end of epoch 'epoch' (after the divergence test, before the test evaluation): the epochs unit's tournament, or in
   the steps unit the one after the epoch's last step, if the interval says so */
PetscErrorCode TrainerPopulationTournament_Private(Trainer tr, PetscInt epoch)
{
  TrainerPopulation pop = tr->population;

  PetscFunctionBegin;
  if (!pop || pop->K == 1) PetscFunctionReturn(0);
  if (pop->unit == POP_UNIT_STEPS)
    PetscCall(PopStepTournament(tr, epoch, pop->nbatches));
  else if (epoch % pop->interval == 0)
    PetscCall(PopTournament(tr, epoch, -1, 0));
  PetscFunctionReturn(0);
}

/* Steps unit, the update hook (TrainerNextBatch_Private()) before batch tr->ibatch of epoch tr->epoch + 1 is drawn: the
   tournament after the step before it, when due. Inside the running TaoSolve(): it may replace the solution (the Net's
   parameter Vec), the optimizer's state Vecs, step and hyperparameters, which PetNet's optimizers read only after
   this hook (src/optim/optim.c), and the Net's buffers; its evaluation runs in evaluation mode before the batch's
   forward pass, so the pass that the update (and K-FAC's statistics) uses is the batch's own. */
PetscErrorCode TrainerPopulationStep_Private(Trainer tr)
{
  TrainerPopulation pop = tr->population;

  PetscFunctionBegin;
  if (!pop || pop->K == 1 || pop->unit != POP_UNIT_STEPS) PetscFunctionReturn(0);
  PetscCall(PopStepTournament(tr, tr->epoch + 1, tr->ibatch));
  PetscFunctionReturn(0);
}

/* Steps unit: this trainer's solve stopped before the epoch's last batch (a NaN or Inf loss, or a convergence test),
   while the others step on and hold tournaments. It passes the remaining steps without training, taking part in their
   tournaments (diverged, it scores worst and its partner's model replaces it). *resume: it took a partner's model at
   the tournament before batch tr->ibatch and trains on from that batch; its epoch's training loss then counts the
   batches after the replacement. */
PetscErrorCode TrainerPopulationSkipSteps_Private(Trainer tr, PetscBool *resume)
{
  TrainerPopulation  pop = tr->population;
  TaoConvergedReason reason;

  PetscFunctionBegin;
  *resume = PETSC_FALSE;
  if (!pop || pop->K == 1 || pop->unit != POP_UNIT_STEPS) PetscFunctionReturn(0);
  PetscCall(TaoGetConvergedReason(tr->tao, &reason));
  if (tr->diverged || reason == TAO_DIVERGED_NAN) {
    char      what[128];
    PetscBool handled;

    PetscCall(PetscSNPrintf(what, sizeof(what), "the loss became NaN or Inf at batch %" PetscInt_FMT " of epoch %" PetscInt_FMT, tr->ibatch, tr->epoch + 1));
    PetscCall(TrainerPopulationDiverged_Private(tr, what, &handled));
  }
  for (; tr->ibatch < tr->nbatches; tr->ibatch++) {
    PetscInt t = pop->ntournaments;

    PetscCall(PopStepTournament(tr, tr->epoch + 1, tr->ibatch));
    if (pop->ntournaments > t && pop->adopted) {
      tr->diverged     = PETSC_FALSE;
      tr->epochloss    = 0;
      tr->epochsamples = 0;
      *resume          = PETSC_TRUE;
      break;
    }
  }
  PetscFunctionReturn(0);
}

/* -trainer_population_monitor: rows gathered on rank 0 of the job, one per trainer, at the end of an epoch or (midepoch,
   steps unit) after a tournament inside it, whose losses and accuracy columns are then empty. now: a tournament ran at
   this point (its columns are filled). The steps unit adds the column step (the global optimizer step). */
static PetscErrorCode PopMonitorRows(Trainer tr, PetscInt epoch, PetscInt gstep, PetscBool midepoch, PetscBool now)
{
  TrainerPopulation pop               = tr->population;
  PetscReal         mine[POP_MONITOR] = {0}, *rows = NULL;

  PetscFunctionBegin;
  if (!pop->monitor[0]) PetscFunctionReturn(0);
  mine[0] = tr->trainloss;
  mine[1] = tr->test ? tr->testloss : PETSC_MAX_REAL;
  mine[2] = tr->test ? tr->testacc : -1;
  mine[3] = pop->nhyper ? pop->hyper[0].value : -1;
  mine[4] = now ? pop->ntournaments : 0;
  mine[5] = now ? pop->partner : -1;
  mine[6] = now ? pop->ownmetric : 0;
  mine[7] = now && pop->partner >= 0 ? pop->partmetric : 0;
  mine[8] = now ? pop->adopted : 0;
  mine[9] = pop->diverged;
  for (PetscInt h = 0; h < pop->nhyper; h++) mine[10 + h] = pop->hyper[h].value;
  if (pop->rank == 0) PetscCall(PetscMalloc1((size_t)pop->size * POP_MONITOR, &rows));
  PetscCallMPI(MPI_Gather(mine, POP_MONITOR, MPIU_REAL, rows, POP_MONITOR, MPIU_REAL, 0, pop->comm));
  if (pop->rank == 0) {
    for (PetscInt i = 0; i < pop->K; i++) {
      const PetscReal *r  = rows + (size_t)i * pop->P * POP_MONITOR;
      FILE            *fp = pop->files[pop->files[i] ? i : 0];

      PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%" PetscInt_FMT ",%" PetscInt_FMT ",", i, epoch));
      if (pop->unit == POP_UNIT_STEPS) PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%" PetscInt_FMT ",", gstep));
      if (midepoch)
        PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, ",,,%.9g,", (double)r[3]));
      else
        PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%.9g,%.9g,%.6f,%.9g,", (double)r[0], (double)r[1], (double)r[2], (double)r[3]));
      for (PetscInt h = 1; h < pop->nhyper; h++) /* a column for every hyperparameter searched besides lr */
        if (pop->hyper[h].req) PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%.9g,", (double)r[10 + h]));
      if (r[4] > 0 && r[5] >= 0)
        PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%d,%d,%.9g,%.9g,%d,%d\n", (int)r[4], (int)r[5], (double)r[6], (double)r[7], (int)r[8], (int)r[9]));
      else if (r[4] > 0)
        PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, "%d,,%.9g,,0,%d\n", (int)r[4], (double)r[6], (int)r[9]));
      else
        PetscCall(PetscFPrintf(PETSC_COMM_SELF, fp, ",,,,,%d\n", (int)r[9]));
      fflush(fp);
    }
    PetscCall(PetscFree(rows));
  }
  PetscFunctionReturn(0);
}

/* -trainer_population_monitor: the rows of the end of epoch 'epoch', with the columns of the tournament that ran there */
PetscErrorCode TrainerPopulationMonitor_Private(Trainer tr, PetscInt epoch)
{
  TrainerPopulation pop = tr->population;
  PetscBool         now;

  PetscFunctionBegin;
  if (!pop || !pop->monitor[0]) PetscFunctionReturn(0);
  if (pop->unit == POP_UNIT_STEPS)
    now = pop->K > 1 && pop->laststep == epoch * pop->nbatches ? PETSC_TRUE : PETSC_FALSE;
  else
    now = pop->K > 1 && epoch % pop->interval == 0 ? PETSC_TRUE : PETSC_FALSE;
  PetscCall(PopMonitorRows(tr, epoch, epoch * pop->nbatches, PETSC_FALSE, now));
  PetscFunctionReturn(0);
}

/* The end of training: every trainer scores its model on its own tournament set; the best is the winner (a tie: the
   lowest number); rank 0 of the job prints the winner, every trainer's test accuracy and the winner's lineage.
   *iswinner tells this trainer whether it writes -net_save. */
PetscErrorCode TrainerPopulationFinish_Private(Trainer tr, PetscBool *iswinner)
{
  TrainerPopulation pop = tr->population;
  PetscReal         metric, score, *all, *mine;
  PetscInt          K, w = 0;
  char              line[8192] = "";

  PetscFunctionBegin;
  *iswinner = PETSC_TRUE;
  if (!pop) PetscFunctionReturn(0);
  K = pop->K;
  PetscCall(NetSetParameters(tr->net, tr->theta));
  PetscCall(PopScore(tr, &metric, &score));
  if (pop->diverged) score = PETSC_MIN_REAL;
  PetscCall(PetscCalloc2(5, &mine, (size_t)5 * pop->size, &all));
  mine[0] = score;
  mine[1] = metric;
  mine[2] = tr->test ? tr->testacc : -1;
  mine[3] = pop->nhyper ? pop->hyper[0].value : -1;
  mine[4] = pop->rank % pop->P == 0 ? pop->exchanges : 0;
  PetscCallMPI(MPI_Allgather(mine, 5, MPIU_REAL, all, 5, MPIU_REAL, pop->comm));
  pop->totalexchanges = 0;
  for (PetscInt i = 0; i < K; i++) {
    const PetscReal *r = all + (size_t)i * pop->P * 5;

    if (r[0] > all[(size_t)w * pop->P * 5]) w = i;
    pop->totalexchanges += (PetscInt)r[4];
  }
  pop->winner    = w;
  pop->winnerlr  = all[(size_t)w * pop->P * 5 + 3];
  pop->winneracc = all[(size_t)w * pop->P * 5 + 2];
  pop->finished  = PETSC_TRUE;
  *iswinner      = w == pop->k ? PETSC_TRUE : PETSC_FALSE;
  if (pop->rank == 0) {
    size_t    len;
    PetscInt  cur   = w;
    PetscBool moved = PETSC_FALSE;

    PetscCall(PetscSNPrintf(line, sizeof(line),
                            pop->metric == POP_METRIC_LOSS
                                ? "population: %" PetscInt_FMT " trainers, %" PetscInt_FMT " tournaments, %" PetscInt_FMT " exchanges; winner trainer %" PetscInt_FMT " (loss %.6f on its tournament set); test accuracy by trainer:"
                                : "population: %" PetscInt_FMT " trainers, %" PetscInt_FMT " tournaments, %" PetscInt_FMT " exchanges; winner trainer %" PetscInt_FMT " (accuracy %.4f on its tournament set); test accuracy by trainer:",
                            K, pop->ntournaments, pop->totalexchanges, w, (double)all[(size_t)w * pop->P * 5 + 1]));
    for (PetscInt i = 0; i < K; i++) {
      PetscCall(PetscStrlen(line, &len));
      PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " %" PetscInt_FMT ":%.4f", i, (double)all[(size_t)i * pop->P * 5 + 2]));
    }
    PetscCall(PetscStrlen(line, &len));
    PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, "\nlineage of the winner: trainer %" PetscInt_FMT, w));
    for (PetscInt t = pop->ntournaments - 1; t >= pop->tfirst; t--) {
      PetscInt par = pop->parent[t * K + cur];

      if (par == cur) continue;
      PetscCall(PetscStrlen(line, &len));
      if (pop->unit == POP_UNIT_STEPS)
        PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " <- %" PetscInt_FMT " (tournament %" PetscInt_FMT ", step %" PetscInt_FMT ", epoch %" PetscInt_FMT ")", par, t + 1, pop->tstep[t], pop->tepoch[t]));
      else
        PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " <- %" PetscInt_FMT " (tournament %" PetscInt_FMT ", epoch %" PetscInt_FMT ")", par, t + 1, pop->tepoch[t]));
      cur   = par;
      moved = PETSC_TRUE;
    }
    if (!moved) {
      PetscCall(PetscStrlen(line, &len));
      PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, " (its own model throughout)"));
    }
    if (pop->tfirst > 0) {
      PetscCall(PetscStrlen(line, &len));
      PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, "; before tournament %" PetscInt_FMT " (the restart) not recorded", pop->tfirst + 1));
    }
  }
  PetscCall(PetscPrintf(pop->comm, "%s\n", line));
  PetscCall(PetscFree2(mine, all));
  PetscFunctionReturn(0);
}

PetscErrorCode TrainerPopulationView_Private(Trainer tr, PetscViewer viewer)
{
  TrainerPopulation pop = tr->population;

  PetscFunctionBegin;
  if (!pop) PetscFunctionReturn(0);
  PetscCall(PetscViewerASCIIPrintf(viewer, "population: trainer %" PetscInt_FMT " of %" PetscInt_FMT " (%d ranks each), data %s, shard of %" PetscInt_FMT " samples from %" PetscInt_FMT ", tournament set %" PetscInt_FMT "\n", pop->k, pop->K, pop->P,
                                   PopDatas[pop->data], pop->shardsize, pop->shardstart, pop->tsamples));
  PetscCall(PetscViewerASCIIPrintf(viewer, "tournaments: every %" PetscInt_FMT " %s, metric %s, exchange %s, seed %" PetscInt_FMT "\n", pop->interval, pop->unit == POP_UNIT_STEPS ? "optimizer steps" : "epochs", PopMetrics[pop->metric],
                                   PopExchanges[pop->exchange], pop->seed));
  if (pop->nhyper) { /* set up: this trainer's values, those searched (init or explore) marked with * */
    char   line[1024] = "";
    size_t len;

    for (PetscInt h = 0; h < pop->nhyper; h++) {
      PetscCall(PetscStrlen(line, &len));
      PetscCall(PetscSNPrintf(line + len, sizeof(line) - len, "%s %s%s %g", h ? "," : "", pop->hyper[h].kind->name, pop->hyper[h].req ? "*" : "", (double)pop->hyper[h].value));
    }
    PetscCall(PetscViewerASCIIPrintf(viewer, "hyperparameters (* searched):%s\n", line));
  }
  PetscFunctionReturn(0);
}

PetscErrorCode TrainerPopulationDestroy_Private(Trainer tr)
{
  TrainerPopulation pop = tr->population;

  PetscFunctionBegin;
  if (!pop) PetscFunctionReturn(0);
  if (pop->files) {
    for (PetscInt i = 0; i < pop->K; i++)
      if (pop->files[i]) PetscCall(PetscFClose(PETSC_COMM_SELF, pop->files[i]));
    PetscCall(PetscFree(pop->files));
  }
  PetscCall(DatasetDestroy(&pop->tournament));
  PetscCall(VecDestroy(&pop->keep));
  PetscCall(PetscFree3(pop->parent, pop->tepoch, pop->tstep));
  PetscCall(PetscCommDestroy(&pop->comm));
  PetscCall(PetscFree(tr->population));
  PetscFunctionReturn(0);
}

/* After a restart (TrainerLoadCheckpoint() of trainer k's own file): a hyperparameter the population carries (name: lr,
   wd, the TAO type's own, smoothing) is the checkpoint's, not the -trainer_population_init spread (the tournaments and
   explore steps since moved it); *taken says whether it is one (else the caller compares it with the options) */
PetscErrorCode TrainerPopulationRestoreHyper_Private(Trainer tr, const char name[], PetscReal value, PetscBool *taken)
{
  TrainerPopulation pop = tr->population;

  PetscFunctionBegin;
  *taken = PETSC_FALSE;
  if (!pop) PetscFunctionReturn(0);
  for (PetscInt h = 0; h < pop->nhyper; h++) {
    PopHyper *hp = &pop->hyper[h];

    if (strcmp(hp->kind->name, name)) continue;
    hp->value = value;
    PetscCall(PopHyperSet(tr, hp->kind, hp->value));
    *taken = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

/* After a restart: every trainer resumes at the same epoch (a trainer whose checkpoint is older, e.g. one that diverged
   before it was replaced, cannot rejoin the others' tournaments), and the tournaments so far are counted, so that the
   pairs and explore draws of the next, drawn from (seed, tournament number), are the uninterrupted run's */
PetscErrorCode TrainerPopulationRestart_Private(Trainer tr)
{
  TrainerPopulation pop = tr->population;
  PetscInt          e[2], r[2];

  PetscFunctionBegin;
  e[0] = tr->epoch;
  e[1] = -tr->epoch;
  PetscCall(MPIU_Allreduce(e, r, 2, MPIU_INT, MPI_MIN, pop->comm));
  PetscCheck(r[0] == -r[1], pop->comm, PETSC_ERR_ARG_INCOMP,
             "The trainers' checkpoints end different epochs (%" PetscInt_FMT " to %" PetscInt_FMT "; -trainer_restart %s is trainer %" PetscInt_FMT
             "'s): a population restarts from checkpoints of one epoch; restart from an earlier set of files or start afresh",
             r[0], -r[1], tr->restart, pop->k);
  pop->ntournaments = pop->unit == POP_UNIT_STEPS ? tr->epoch * pop->nbatches / pop->interval : tr->epoch / pop->interval;
  pop->tfirst       = pop->ntournaments;
  PetscFunctionReturn(0);
}

/* The job's communicator (-trainer_fail_after_epoch waits for every trainer there) */
PetscErrorCode TrainerPopulationGetJobComm_Private(Trainer tr, MPI_Comm *comm)
{
  PetscFunctionBegin;
  *comm = tr->population ? tr->population->comm : PetscObjectComm((PetscObject)tr);
  PetscFunctionReturn(0);
}
