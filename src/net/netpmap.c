/*
  Where a node's kernel gets its parameters when they are not replicated: the gather of some entries of a distributed
  Vec (theta, or a direction laid out like it) into one local array, and its adjoint, the reduce-add of an array laid
  out the same way back into a distributed Vec (a gradient).

    G   : theta (distributed, rank q owning [r_q, r_q+1))  ->  buf (this rank: the entries of its runs, end to end)
    G^T : gbuf (each rank's)                               ->  g += sum over ranks of their gbuf, at the runs' entries

  Each rank asks for ascending, disjoint runs [start, start + len) of global indices. Two patterns:

    whole    every rank asks for the same single run (a data-parallel node in sharded mode, ZeRO-3): G is an
             MPI_Allgatherv of the owners' pieces and G^T an MPI_Reduce_scatter into them; a node of a sharded
             pipeline stage does the same over its stage's communicator, whose ranks own the whole run
             (NetParamMapCreateOn_Private());
    general  each rank its own runs (a model-parallel node: its block of the weights): G is one MPI_Alltoallv whose
             send side packs the asked-for pieces of the owned slice, G^T the reverse MPI_Alltoallv and an add.

  Only run lists are kept (a few per node and rank), never a per-entry index: the map costs no memory next to the
  parameters it moves. Because ownership ranges and runs both ascend, the entries a rank receives from owner q are
  one contiguous piece of its buffer.

  Memory: besides buf, a gather or reduce-add allocates only what crosses ranks. The pieces a rank asks of itself (in
  the general pattern, most of a model-parallel block when the split matches the ownership ranges) are copied or added
  between its slice and buf directly, never through the send buffer, and G^T of the whole pattern reduces in place in
  buf (which it overwrites). So a node's gather costs its block and the crossing pieces, not two blocks (MLP
  784-8192-8192-10 on 2 ranks, its 8192x8192 layer split 2x1: a send buffer of 25 MB instead of 243 MB,
  docs/benchmarks.md).
*/
#include <petnet/private/netimpl.h>
#include "netpmap.h"

struct _n_NetParamMap {
  MPI_Comm    comm;
  PetscMPIInt size, rank;
  PetscInt    n; /* entries this rank receives */
  PetscBool   whole;
  /* whole: rank q owns counts[q] entries of the run, at displs[q] in it; this rank's piece starts at myoff of its slice */
  PetscMPIInt *counts, *displs;
  PetscInt     myoff;
  /* general: per peer q, what goes to it (scounts, packed from the runs srun*) and what comes from it (rcounts); the
     peer this rank itself is has counts 0: its pieces are the sruns [sself, sself + nsself), nself entries at rself in buf */
  PetscMPIInt *scounts, *sdispls, *rcounts, *rdispls;
  PetscInt     nsruns, *srunoff, *srunlen, nsend;
  PetscInt     sself, nsself, nself, rself;
  /* the runs of this rank in its own local slice, for one rank (no MPI) */
  PetscInt nruns, *runstart, *runlen, rstart;
};

static PetscErrorCode NetParamMapCheckCount_Private(MPI_Comm comm, PetscInt64 n, const char what[])
{
  PetscFunctionBegin;
  PetscCheck(n <= PETSC_MPI_INT_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE, "The parameter exchange of a node sends %" PetscInt64_FMT " values %s, more than one MPI message holds: split the layer over more ranks", n, what);
  PetscFunctionReturn(0);
}

/*
  NetParamMapCreateOn_Private - the map of the runs [runstart[i], runstart[i] + runlen[i]) (ascending, disjoint; nruns
  == 0 means the single run [start, start + len)) of global indices of Vecs laid out like v, exchanged over comm: the
  ranks [first, first + size of comm) of v's communicator, in the same order (a pipeline stage's group, netplace.c; v's
  own communicator with first = 0 for every other map). Every entry of the runs must be owned by those ranks: a map
  on a group moves only what its ranks hold, and the other ranks never call it (collective on comm only).
*/
PetscErrorCode NetParamMapCreateOn_Private(Vec v, MPI_Comm comm, PetscMPIInt first, PetscInt nruns, const PetscInt runstart[], const PetscInt runlen[], PetscInt start, PetscInt len, NetParamMap *map)
{
  NetParamMap     m;
  const PetscInt *ranges;
  PetscInt        rstart, rend, one[2], lo[2], hi[2];

  PetscFunctionBegin;
  PetscCall(PetscNew(&m));
  *map    = m;
  m->comm = comm;
  PetscCallMPI(MPI_Comm_size(m->comm, &m->size));
  PetscCallMPI(MPI_Comm_rank(m->comm, &m->rank));
  PetscCall(VecGetOwnershipRange(v, &rstart, &rend));
  PetscCall(VecGetOwnershipRanges(v, &ranges));
  ranges += first; /* ranges[q]: where rank q of comm starts owning */
  m->rstart = rstart;
  if (!nruns) { /* the single run: keep it as a one-run list */
    m->nruns = 1;
    PetscCall(PetscMalloc2(1, &m->runstart, 1, &m->runlen));
    m->runstart[0] = start;
    m->runlen[0]   = len;
  } else {
    m->nruns = nruns;
    PetscCall(PetscMalloc2(nruns, &m->runstart, nruns, &m->runlen));
    PetscCall(PetscArraycpy(m->runstart, runstart, nruns));
    PetscCall(PetscArraycpy(m->runlen, runlen, nruns));
  }
  m->n = 0;
  for (PetscInt i = 0; i < m->nruns; i++) {
    PetscCheck(m->runlen[i] >= 0 && (!i || m->runstart[i] >= m->runstart[i - 1] + m->runlen[i - 1]), PETSC_COMM_SELF, PETSC_ERR_PLIB, "Parameter runs must ascend without overlap");
    PetscCheck(!m->runlen[i] || (m->runstart[i] >= ranges[0] && m->runstart[i] + m->runlen[i] <= ranges[m->size]), PETSC_COMM_SELF, PETSC_ERR_PLIB,
               "Parameter run [%" PetscInt_FMT ", %" PetscInt_FMT ") is not owned by the ranks of its map (entries [%" PetscInt_FMT ", %" PetscInt_FMT "))", m->runstart[i], m->runstart[i] + m->runlen[i], ranges[0], ranges[m->size]);
    m->n += m->runlen[i];
  }
  /* whole: one run, the same on every rank */
  one[0] = m->nruns == 1 ? m->runstart[0] : -1;
  one[1] = m->nruns == 1 ? m->runlen[0] : -1;
  PetscCall(MPIU_Allreduce(one, lo, 2, MPIU_INT, MPI_MIN, m->comm));
  PetscCall(MPIU_Allreduce(one, hi, 2, MPIU_INT, MPI_MAX, m->comm));
  m->whole = (PetscBool)(lo[0] == hi[0] && lo[1] == hi[1] && lo[0] >= 0);
  if (m->size == 1) PetscFunctionReturn(0);
  if (m->whole) {
    PetscInt s = m->runstart[0], e = s + m->runlen[0];

    PetscCall(PetscMalloc2(m->size, &m->counts, m->size, &m->displs));
    for (PetscMPIInt q = 0; q < m->size; q++) {
      PetscInt a = PetscMax(s, ranges[q]), b = PetscMin(e, ranges[q + 1]);

      m->counts[q] = (PetscMPIInt)PetscMax(b - a, 0);
      m->displs[q] = (PetscMPIInt)(b > a ? a - s : 0);
    }
    m->myoff = PetscMax(s, rstart) - rstart;
    PetscFunctionReturn(0);
  }
  { /* general: everyone's runs, then what each owner sends where */
    PetscMPIInt *nr, *off;
    PetscInt    *allstart, *alllen, total = 0;
    PetscInt64   nsend = 0, nrecv = 0;

    PetscCall(PetscMalloc2(m->size, &nr, m->size + 1, &off));
    {
      PetscMPIInt mine = (PetscMPIInt)m->nruns;

      PetscCallMPI(MPI_Allgather(&mine, 1, MPI_INT, nr, 1, MPI_INT, m->comm));
    }
    off[0] = 0;
    for (PetscMPIInt q = 0; q < m->size; q++) {
      total += nr[q];
      PetscCall(NetParamMapCheckCount_Private(m->comm, total, "as run descriptions"));
      off[q + 1] = (PetscMPIInt)total;
    }
    PetscCall(PetscMalloc2(total, &allstart, total, &alllen));
    PetscCallMPI(MPI_Allgatherv(m->runstart, (PetscMPIInt)m->nruns, MPIU_INT, allstart, nr, off, MPIU_INT, m->comm));
    PetscCallMPI(MPI_Allgatherv(m->runlen, (PetscMPIInt)m->nruns, MPIU_INT, alllen, nr, off, MPIU_INT, m->comm));
    PetscCall(PetscMalloc4(m->size, &m->scounts, m->size, &m->sdispls, m->size, &m->rcounts, m->size, &m->rdispls));
    /* send side: the pieces of q's runs that lie in my slice, in q's order */
    m->nsruns = 0;
    for (PetscInt i = 0; i < total; i++)
      if (PetscMax(allstart[i], rstart) < PetscMin(allstart[i] + alllen[i], rend)) m->nsruns++;
    PetscCall(PetscMalloc2(m->nsruns, &m->srunoff, m->nsruns, &m->srunlen));
    m->nsruns = 0;
    for (PetscMPIInt q = 0; q < m->size; q++) {
      PetscInt64 c = 0;

      if (q == m->rank) m->sself = m->nsruns;
      for (PetscInt i = off[q]; i < off[q + 1]; i++) {
        PetscInt a = PetscMax(allstart[i], rstart), b = PetscMin(allstart[i] + alllen[i], rend);

        if (a >= b) continue;
        m->srunoff[m->nsruns] = a - rstart;
        m->srunlen[m->nsruns] = b - a;
        m->nsruns++;
        c += b - a;
      }
      if (q == m->rank) { /* to itself: copied directly, nothing in the send buffer */
        m->nsself = m->nsruns - m->sself;
        c         = 0;
      }
      PetscCall(NetParamMapCheckCount_Private(m->comm, nsend, "in all"));
      m->sdispls[q] = (PetscMPIInt)nsend;
      m->scounts[q] = (PetscMPIInt)c;
      nsend += c;
    }
    PetscCall(NetParamMapCheckCount_Private(m->comm, nsend, "in all"));
    m->nsend = (PetscInt)nsend;
    /* receive side: my runs cut by the owners' ranges; contiguous per owner in my buffer */
    for (PetscMPIInt q = 0; q < m->size; q++) {
      PetscInt64 c = 0;

      for (PetscInt i = 0; i < m->nruns; i++) {
        PetscInt a = PetscMax(m->runstart[i], ranges[q]), b = PetscMin(m->runstart[i] + m->runlen[i], ranges[q + 1]);

        if (a < b) c += b - a;
      }
      m->rdispls[q] = (PetscMPIInt)nrecv;
      m->rcounts[q] = (PetscMPIInt)c;
      nrecv += c;
    }
    PetscCheck(nrecv == m->n, PETSC_COMM_SELF, PETSC_ERR_PLIB, "Parameter runs reach beyond the parameter vector");
    m->rself            = m->rdispls[m->rank];
    m->nself            = m->rcounts[m->rank];
    m->rcounts[m->rank] = 0;
    {
      PetscInt64 c = 0;

      for (PetscInt i = m->sself; i < m->sself + m->nsself; i++) c += m->srunlen[i];
      PetscCheck(c == m->nself, PETSC_COMM_SELF, PETSC_ERR_PLIB, "The pieces a rank sends itself (%" PetscInt64_FMT ") differ from those it receives (%" PetscInt_FMT ")", c, m->nself);
    }
    PetscCall(PetscFree2(allstart, alllen));
    PetscCall(PetscFree2(nr, off));
  }
  PetscFunctionReturn(0);
}

/* the map of those runs over v's own communicator (every rank) */
PetscErrorCode NetParamMapCreate_Private(Vec v, PetscInt nruns, const PetscInt runstart[], const PetscInt runlen[], PetscInt start, PetscInt len, NetParamMap *map)
{
  PetscFunctionBegin;
  PetscCall(NetParamMapCreateOn_Private(v, PetscObjectComm((PetscObject)v), 0, nruns, runstart, runlen, start, len, map));
  PetscFunctionReturn(0);
}

PetscErrorCode NetParamMapDestroy_Private(NetParamMap *map)
{
  NetParamMap m = *map;

  PetscFunctionBegin;
  if (!m) PetscFunctionReturn(0);
  PetscCall(PetscFree2(m->runstart, m->runlen));
  PetscCall(PetscFree2(m->counts, m->displs));
  PetscCall(PetscFree4(m->scounts, m->sdispls, m->rcounts, m->rdispls));
  PetscCall(PetscFree2(m->srunoff, m->srunlen));
  PetscCall(PetscFree(m));
  *map = NULL;
  PetscFunctionReturn(0);
}

/* buf = G v: this rank's entries of v (buf holds the sum of the rank's run lengths) */
PetscErrorCode NetParamMapGather_Private(NetParamMap m, Vec v, PetscScalar buf[])
{
  const PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(VecGetArrayRead(v, &a));
  if (m->size == 1) {
    for (PetscInt i = 0, o = 0; i < m->nruns; o += m->runlen[i], i++) PetscCall(PetscArraycpy(buf + o, a + m->runstart[i] - m->rstart, m->runlen[i]));
  } else if (m->whole) {
    PetscCallMPI(MPI_Allgatherv(a + m->myoff, m->counts[m->rank], MPIU_SCALAR, buf, m->counts, m->displs, MPIU_SCALAR, m->comm));
  } else {
    PetscScalar *sbuf;

    PetscCall(PetscMalloc1(m->nsend, &sbuf)); /* the pieces for other ranks only */
    for (PetscInt i = 0, o = 0, oself = m->rself; i < m->nsruns; i++) {
      if (i >= m->sself && i < m->sself + m->nsself) {
        PetscCall(PetscArraycpy(buf + oself, a + m->srunoff[i], m->srunlen[i]));
        oself += m->srunlen[i];
      } else {
        PetscCall(PetscArraycpy(sbuf + o, a + m->srunoff[i], m->srunlen[i]));
        o += m->srunlen[i];
      }
    }
    PetscCallMPI(MPI_Alltoallv(sbuf, m->scounts, m->sdispls, MPIU_SCALAR, buf, m->rcounts, m->rdispls, MPIU_SCALAR, m->comm));
    PetscCall(PetscFree(sbuf));
  }
  PetscCall(VecRestoreArrayRead(v, &a));
  PetscFunctionReturn(0);
}

/* g += G^T buf: every rank's buf (laid out like its gathered entries) summed into the owners' slices of g; buf is
   overwritten (the whole pattern reduces in place in it) */
PetscErrorCode NetParamMapReduceAdd_Private(NetParamMap m, PetscScalar buf[], Vec g)
{
  PetscScalar *a;

  PetscFunctionBegin;
  PetscCall(VecGetArray(g, &a));
  if (m->size == 1) {
    for (PetscInt i = 0, o = 0; i < m->nruns; o += m->runlen[i], i++) {
      PetscScalar *t = a + m->runstart[i] - m->rstart;

      for (PetscInt j = 0; j < m->runlen[i]; j++) t[j] += buf[o + j];
    }
  } else if (m->whole) {
    PetscScalar *t = a + m->myoff;
    PetscMPIInt  c = m->counts[m->rank];

    /* in place: this rank's sum lands in buf[0, c) */
    PetscCallMPI(MPI_Reduce_scatter(MPI_IN_PLACE, buf, m->counts, MPIU_SCALAR, MPIU_SUM, m->comm));
    for (PetscMPIInt j = 0; j < c; j++) t[j] += buf[j];
  } else {
    PetscScalar *sbuf;

    PetscCall(PetscMalloc1(m->nsend, &sbuf)); /* the pieces from other ranks only */
    PetscCallMPI(MPI_Alltoallv(buf, m->rcounts, m->rdispls, MPIU_SCALAR, sbuf, m->scounts, m->sdispls, MPIU_SCALAR, m->comm));
    for (PetscInt i = 0, o = 0, oself = m->rself; i < m->nsruns; i++) {
      PetscScalar       *t    = a + m->srunoff[i];
      PetscBool          self = (PetscBool)(i >= m->sself && i < m->sself + m->nsself);
      const PetscScalar *s    = self ? buf + oself : sbuf + o;

      for (PetscInt j = 0; j < m->srunlen[i]; j++) t[j] += s[j];
      if (self)
        oself += m->srunlen[i];
      else
        o += m->srunlen[i];
    }
    PetscCall(PetscFree(sbuf));
  }
  PetscCall(VecRestoreArray(g, &a));
  PetscFunctionReturn(0);
}

/*
  The Net's side: each node with parameters gets a map when it does not read the replicated copy (sharded mode, or a
  model-parallel node); the replicated copy, its broadcast and gradient exist when some node reads them. NetModelSetUpNode_Private() decides first whether the node is model parallel and which runs
  its kernel takes.
*/
PetscErrorCode NetSetUpParameterMaps_Private(Net net)
{
  PetscFunctionBegin;
  PetscCall(NetResetParameterMaps_Private(net));                                                                                                               /* a change of mode lays them out anew */
  net->replicated = (PetscBool)(net->parallel == NET_PARALLEL_REPLICATED || net->parallel == NET_PARALLEL_SEQUENCE || net->parallel == NET_PARALLEL_SUBGRAPH); /* the copy exists in this mode, even for a Net without parameters */
  net->gathers    = PETSC_FALSE;
  if (net->pl) { /* pipeline stages: each rank its stage's block (netplace.c) */
    for (PetscInt k = 0; k < net->nlayers; k++) net->nodes[k].nplocal = net->layers[k]->nparams;
    net->replicated = PETSC_TRUE;
    PetscCall(NetPlaceSetUpParameters_Private(net));
    net->theta_rep_valid = PETSC_FALSE;
    PetscFunctionReturn(0);
  }
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetNode    *nd = &net->nodes[k];
    NetParamMap map;

    nd->nplocal = net->layers[k]->nparams;
    PetscCall(NetModelSetUpNode_Private(net, k)); /* a model-parallel node sets mp, nplocal and its runs */
    if (!net->layers[k]->nparams) continue;
    if ((net->parallel == NET_PARALLEL_REPLICATED || net->parallel == NET_PARALLEL_SEQUENCE || net->parallel == NET_PARALLEL_SUBGRAPH) && !nd->mp) continue;
    PetscCall(NetParamMapCreate_Private(net->theta, nd->nruns, nd->runstart, nd->runlen, net->poff[k], net->layers[k]->nparams, &map));
    nd->pmap     = map;
    net->gathers = PETSC_TRUE;
  }
  if (net->replicated && !net->theta_rep) {
    PetscCall(PetNetBroadcastCreate(net->theta, &net->bcast, &net->theta_rep));
    PetscCall(VecDuplicate(net->theta_rep, &net->grad_rep)); /* dtheta_rep: at the first NetJVP() along parameters */
  }
  net->theta_rep_valid = PETSC_FALSE;
  PetscFunctionReturn(0);
}

PetscErrorCode NetResetParameterMaps_Private(Net net)
{
  PetscFunctionBegin;
  PetscCall(VecDestroy(&net->theta_rep));
  PetscCall(VecDestroy(&net->grad_rep));
  PetscCall(VecDestroy(&net->dtheta_rep));
  PetscCall(MatDestroy(&net->bcast));
  PetscCall(PetscFree(net->repoff));
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetNode    *nd  = &net->nodes[k];
    NetParamMap map = (NetParamMap)nd->pmap;

    PetscCall(NetParamMapDestroy_Private(&map));
    nd->pmap = NULL;
    PetscCall(NetModelDestroyNode_Private(net, k));
    PetscCall(PetscFree2(nd->runstart, nd->runlen));
    nd->nruns   = 0;
    nd->nplocal = 0;
    nd->mp      = NULL;
  }
  PetscFunctionReturn(0);
}

/* The array of a replicated Vec, or NULL when there is none (no node reads it) */
PetscErrorCode NetGetReplicatedArray_Private(Vec rep, const PetscScalar **a)
{
  PetscFunctionBegin;
  *a = NULL;
  if (rep) PetscCall(VecGetArrayRead(rep, a));
  PetscFunctionReturn(0);
}

PetscErrorCode NetRestoreReplicatedArray_Private(Vec rep, const PetscScalar **a)
{
  PetscFunctionBegin;
  if (rep) PetscCall(VecRestoreArrayRead(rep, a));
  PetscFunctionReturn(0);
}

/*
  Node k's parameters (or a direction) as its kernel takes them: a node reading the replicated copy gets its block of
  rep (an array laid out like theta_rep, or NULL: zero); a node with a map gets its entries of src (theta or a Vec laid
  out like it, NULL: zero) gathered into a new array, freed by the restore.
*/
PetscErrorCode NetNodeGetParameters_Private(Net net, PetscInt k, Vec src, const PetscScalar *rep, const PetscScalar **th)
{
  NetNode     *nd  = &net->nodes[k];
  NetParamMap  map = (NetParamMap)nd->pmap;
  PetscScalar *buf;

  PetscFunctionBegin;
  if (!map) {
    *th = rep && (!net->repoff || net->repoff[k] >= 0) ? rep + (net->repoff ? net->repoff[k] : net->poff[k]) : NULL; /* placed: this rank's stage only */
    PetscFunctionReturn(0);
  }
  *th = NULL;
  if (!src) PetscFunctionReturn(0);
  PetscCall(PetscMalloc1(nd->nplocal, &buf));
  PetscCall(NetParamMapGather_Private(map, src, buf));
  *th = buf;
  PetscFunctionReturn(0);
}

PetscErrorCode NetNodeRestoreParameters_Private(Net net, PetscInt k, const PetscScalar **th)
{
  PetscFunctionBegin;
  if (net->nodes[k].pmap) PetscCall(PetscFree(*th));
  *th = NULL;
  PetscFunctionReturn(0);
}

/* Where node k's kernel accumulates its gradient: its block of rep (laid out like grad_rep), or, for a node with a map,
   a zeroed array that the restore reduces into G (want: a gradient is asked for) */
PetscErrorCode NetNodeGetGradient_Private(Net net, PetscInt k, PetscScalar *rep, PetscBool want, PetscScalar **g)
{
  PetscFunctionBegin;
  *g = NULL;
  if (!net->nodes[k].pmap) {
    if (rep && (!net->repoff || net->repoff[k] >= 0)) *g = rep + (net->repoff ? net->repoff[k] : net->poff[k]);
  } else if (want)
    PetscCall(PetscCalloc1(net->nodes[k].nplocal, g));
  PetscFunctionReturn(0);
}

PetscErrorCode NetNodeRestoreGradient_Private(Net net, PetscInt k, Vec G, PetscScalar **g)
{
  PetscFunctionBegin;
  if (net->nodes[k].pmap && *g) {
    PetscCall(NetParamMapReduceAdd_Private((NetParamMap)net->nodes[k].pmap, *g, G));
    PetscCall(PetscFree(*g));
  }
  *g = NULL;
  PetscFunctionReturn(0);
}

/*
  The array a reverse walk's nodes add their parameter gradients (or Hessian products) into, for the parameter-layout
  Vec G that receives them (NULL when G is NULL or no node reads the replicated copy): on one rank with every node
  reading the replicated copy, G's own array, since the broadcast is then the identity (no copy to zero, no sum to
  add: 50 us of a 1 ms MLP step); else grad_rep zeroed, which the restore adds into G (MatMultTransposeAdd of the
  broadcast). Into G directly, a G that already held values gets the nodes' terms one by one instead of their sum:
  the same up to round-off.
*/
/* the gradient goes straight into G: one rank, every node reading the replicated copy */
static PetscErrorCode NetGradientDirect(Net net, PetscBool *direct)
{
  PetscMPIInt size;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)net), &size));
  *direct = (PetscBool)(size == 1 && !net->repoff); /* placed: theta_rep holds a stage's block, laid out its own way */
  for (PetscInt k = 0; k < net->nlayers && *direct; k++) *direct = (PetscBool)!net->nodes[k].pmap;
  PetscFunctionReturn(0);
}

PetscErrorCode NetGetGradientArray_Private(Net net, Vec G, PetscScalar **grad)
{
  PetscBool direct;

  PetscFunctionBegin;
  *grad = NULL;
  if (!G || !net->grad_rep) PetscFunctionReturn(0);
  PetscCall(NetGradientDirect(net, &direct));
  if (direct) {
    PetscCall(VecGetArray(G, grad));
    PetscFunctionReturn(0);
  }
  PetscCall(VecZeroEntries(net->grad_rep));
  PetscCall(VecGetArray(net->grad_rep, grad));
  PetscFunctionReturn(0);
}

PetscErrorCode NetRestoreGradientArray_Private(Net net, Vec G, PetscScalar **grad)
{
  PetscBool direct;

  PetscFunctionBegin;
  if (!G || !net->grad_rep) PetscFunctionReturn(0); /* as the get decided (not *grad: an empty array may be NULL, and the sum below is collective) */
  PetscCall(NetGradientDirect(net, &direct));
  if (direct) {
    PetscCall(VecRestoreArray(G, grad));
    PetscFunctionReturn(0);
  }
  PetscCall(VecRestoreArray(net->grad_rep, grad));
  PetscCall(MatMultTransposeAdd(net->bcast, net->grad_rep, G, G));
  PetscFunctionReturn(0);
}

/* Nodes that gather their parameters again for each derivative must find theta as NetForward() left it */
PetscErrorCode NetCheckParametersUnchanged_Private(Net net, const char caller[])
{
  PetscObjectState state;

  PetscFunctionBegin;
  if (!net->gathers) PetscFunctionReturn(0); /* the replicated copy keeps the point of the forward pass */
  PetscCall(PetscObjectStateGet((PetscObject)net->theta, &state));
  PetscCheck(state == net->theta_fwd_state, PetscObjectComm((PetscObject)net), PETSC_ERR_ARG_WRONGSTATE,
             "%s(): the parameters changed since the last NetForward(), and with -net_parallel %s the nodes read them again instead of keeping a copy: call NetForward() again at the new parameters first", caller, NetParallelTypes[net->parallel]);
  PetscFunctionReturn(0);
}

/* The whole parameter block of node k on every rank (for saving): a view of rep (theta_rep's array), or gathered */
PetscErrorCode NetGetNodeBlock_Private(Net net, PetscInt k, const PetscScalar *rep, const PetscScalar **blk)
{
  NetParamMap  map;
  PetscScalar *buf;

  PetscFunctionBegin;
  if (rep && !net->repoff) {
    *blk = rep + net->poff[k];
    PetscFunctionReturn(0);
  }
  PetscCall(NetParamMapCreate_Private(net->theta, 0, NULL, NULL, net->poff[k], net->layers[k]->nparams, &map));
  PetscCall(PetscMalloc1(net->layers[k]->nparams, &buf));
  PetscCall(NetParamMapGather_Private(map, net->theta, buf));
  PetscCall(NetParamMapDestroy_Private(&map));
  *blk = buf;
  PetscFunctionReturn(0);
}

PetscErrorCode NetRestoreNodeBlock_Private(Net net, PetscInt k, const PetscScalar **blk)
{
  PetscFunctionBegin;
  if (!net->theta_rep || net->repoff) PetscCall(PetscFree(*blk));
  *blk = NULL;
  PetscFunctionReturn(0);
}
