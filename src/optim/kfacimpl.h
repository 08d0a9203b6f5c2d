/*
  Private: the Kronecker-factored approximate curvature (K-FAC) of a Net, shared by the TAO type kfac (kfac.c) and the
  K-FAC preconditioner (kfacpc.c); the factors and their inverses are in kfacfactors.c.

  A block is the weights of one dense layer, or of one group of a conv2d or conv3d layer, with their bias: nout rows of nin
  weights, row o at parameter woff + o nin, its bias at boff + o. Per sample (and, for conv2d and conv3d, per output point) the
  gradient of the block is g a^T with a the augmented input [x; 1] (na = nin + 1 entries; na = nin without bias) and g
  the output gradient, so that
      F = E[vec(g a^T) vec(g a^T)^T] ~ S (x) A      (row-major vec: entry (o, i) at o na + i)
      A = E[a a^T],  S = E[g g^T]
  and F^{-1} applied to the block's gradient G (nout x na) is S^{-1} G A^{-1} (see kfacfactors.c for the damping and the
  scaling of convolutions).

  Where the factors live (placement, chosen from the Net's parallel mode when K-FAC is created):
    replicated   every rank holds every block's factors (one copy per rank, like the parameters it computes with),
                 inverts them all, and computes the rows of each block that hold parameters it owns;
    owner        sharded and model modes, and a placed Net whose nodes run on groups of ranks (pipeline stages,
                 entry@ranks=a:b, -net_parallel subgraph: a rank's copy holds its groups' nodes' parameters only),
                 where no rank holds a full copy of the parameters: a block's factors are
                 reduced to, kept, inverted and applied by one rank, its owner, the rank that owns the most of the
                 block's weights in the parameter Vec (ties: the lower rank). The owner gathers the block's gradient
                 from the ranks that own pieces of it and sends them their pieces of F^{-1} g.
*/
#pragma once

#include <petnetoptim.h>
#include <petnet/private/layerimpl.h> /* the layers' sizes; the Net only through its public calls */

typedef struct {
  PetscInt node, group; /* the Net node, and its convolution group (0 for dense) */
  PetscInt nin, nout;   /* weights per row (dense: inputs; conv2d: KH KW Cin/G; conv3d: KD KH KW Cin/G) and rows (outputs of the group) */
  PetscInt na;          /* order of A: nin + 1 with a bias, nin without */
  PetscInt pixels;      /* output points per sample (conv2d: Ho Wo; conv3d: Do Ho Wo; dense: 1); in grid mode per field,
                          counted over the ranks at each pass (KFACSumNode()) */
  PetscBool    bias;
  PetscInt     woff, boff; /* parameter index of the block's first weight and of its first bias entry (-1: none) */
  size_t       aoff, soff; /* where the batch sums of A and S are packed (upper triangles) in PetNetKFAC.batch */
  PetscScalar *A, *S;      /* running averages, full symmetric, na x na and nout x nout */
  PetscScalar *Ainv, *Sinv;
  PetscReal    pi;    /* the damping split of the last inversion */
  PetscMPIInt  owner; /* owner placement: the rank that keeps, inverts and applies the factors (-1: every rank) */
  PetscBool    held;  /* this rank holds the factors (aoff, soff, A, S, Ainv, Sinv are set) */
  size_t       noff;  /* where the block's sums (A, then S) start in the packed sums of its node (PetNetKFAC.node) */
  size_t       goff;  /* owner placement, on the owner: where its gradient (weights, then bias) starts in PetNetKFAC.gblk */
} KFACBlock;

typedef struct _n_PetNetKFAC *PetNetKFAC;
struct _n_PetNetKFAC {
  Net        net; /* referenced */
  PetscInt   nblocks;
  KFACBlock *blocks;
  PetscInt   nuncovered; /* parameterised nodes K-FAC does not cover, stepped along the plain gradient */
  PetscInt  *uncovered;
  PetscReal  decay;     /* running average: F <- decay F + (1 - decay) F_batch */
  PetscReal  damping;   /* lambda of the factored Tikhonov damping */
  PetscInt   nupdates;  /* statistics updates so far; the first one replaces the averages */
  PetscInt   nsamples;  /* samples of the passes added since the last update (0: the next pass starts anew) */
  PetscInt   nfirst;    /* ... and those of the first of them */
  PetscInt   ninverted; /* the value of nupdates at the last inversion (-1: never) */

  NetParallelType parallel; /* the Net's mode when the placement was chosen */
  PetscBool       groups;   /* ... and whether a parameterised node ran on a group of ranks smaller than the Net's */
  PetscBool       owned;    /* owner placement (else replicated: every rank holds every factor) */

  PetscScalar *batch; /* this batch's sums of the factors this rank holds, their upper triangles packed (aoff, soff) */
  size_t       nbatch;
  PetscScalar *node, *noderecv; /* one node's sums on this rank (upper triangles, block by block), and this rank's part of
                                   their sum over the ranks; the sums of each pass are reduced node by node */
  size_t       nnode;
  PetscMPIInt *counts;             /* owner placement, per rank: its part of a node's sums (MPI_Reduce_scatter) */
  PetscMPIInt *scounts, *sdispls;  /* ... the gradient's entries this rank sends to each owner, */
  PetscMPIInt *rcounts, *rdispls;  /* ... and those it receives from each rank for the blocks it holds */
  PetscScalar *sbuf, *rbuf, *gblk; /* ... the pieces sent and received, and the gradient of the blocks held */
  size_t       nsend, nrecv;
  PetscScalar *full; /* one factor's batch sums in full storage (the largest) */
  PetscScalar *work; /* patches of conv2d layers, and the gathered gradient of a block in PetNetKFACApply() */
  size_t       nwork;
  PetscInt    *rows; /* PetNetKFACApply(): the rows of a block that hold entries this rank owns */
  Vec          grep; /* replicated placement: the gradient, replicated on every rank */
};

PETSC_INTERN PetscLogEvent PETNET_KFACStatistics, PETNET_KFACInvert, PETNET_KFACApply;

PETSC_INTERN PetscErrorCode PetNetKFACCreate(Net, PetscBool, const char[], PetNetKFAC *);
PETSC_INTERN PetscErrorCode PetNetKFACSetDecay(PetNetKFAC, PetscReal);
PETSC_INTERN PetscErrorCode PetNetKFACSetDamping(PetNetKFAC, PetscReal);
PETSC_INTERN PetscErrorCode PetNetKFACAddStatistics(PetNetKFAC);
PETSC_INTERN PetscErrorCode PetNetKFACUpdateStatistics(PetNetKFAC);
PETSC_INTERN PetscErrorCode PetNetKFACInvert(PetNetKFAC);
PETSC_INTERN PetscErrorCode PetNetKFACApply(PetNetKFAC, Vec, Vec);
PETSC_INTERN PetscErrorCode PetNetKFACView(PetNetKFAC, PetscViewer);
PETSC_INTERN PetscErrorCode PetNetKFACGetFactorEntries(PetNetKFAC, PetscInt64 *, PetscInt64 *);
PETSC_INTERN PetscErrorCode PetNetKFACGetState(PetNetKFAC, PetscInt[2], PetscInt *, PetscInt *[], Vec *);
PETSC_INTERN PetscErrorCode PetNetKFACSetState(PetNetKFAC, const PetscInt[2], Vec);
PETSC_INTERN PetscErrorCode PetNetKFACDestroy(PetNetKFAC *);
PETSC_INTERN PetscErrorCode PetNetKFACNetOnGroups(Net, PetscBool *);
