static const char help[] = "Memory, time and communication of a few Adam steps of a large MLP in each parallel mode of the Net.\n"
                           "  An MLP (default 784-8192-8192-10, 74 M parameters) trained on Fashion-MNIST batches with PetNet's adam TAO type,\n"
                           "  the Net in the mode -bench_mode gives (its -net_parallel): 1 warm-up step, then -bench_steps timed steps.\n"
                           "  -bench_mode replicated|sharded|model   the Net's parallel mode (NetSetParallel())\n"
                           "  -bench_mode pipeline                   replicated stages: -net_stages S (each on P/S ranks) and -net_microbatches M\n"
                           "                                         (NetSetStages(), NetSetMicroBatches()); the summary adds the measured bubble\n"
                           "                                         fraction (1 - time in the rank's kernels / time of its forward and backward\n"
                           "                                         walks, the mean over ranks and steps) beside the ideal (S-1)/(M+S-1);\n"
                           "                                         -net_pipeline_schedule 1f1b: each stage keeps at most S micro-batches\n"
                           "  -bench_mode subgraph                   -net_parallel subgraph: the independent branches of a graph on disjoint groups of\n"
                           "                                         ranks (default Net: two branches 784-2048-2048-2048 joined by add, then dense:10)\n"
                           "  -bench_partition PxQ                   split the 8192x8192 layer (node layer2) over a P x Q grid of ranks in any mode\n"
                           "                                         (-layer2_partition PxQ): -bench_mode sharded -bench_partition 2x1 on 2 ranks is\n"
                           "                                         sharded x model parallel\n"
                           "  -bench_reference_mb M                  the peak of the 1-rank replicated run, to print peak_mem_per_rank_mb / M\n"
                           "  -bench_steps N                         timed steps (default 5), after one warm-up step\n"
                           "  -bench_batch B                         global batch size (default 256)\n"
                           "  -bench_dir DIR                         the Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)\n"
                           "  -bench_selftest                        first check that the byte counter sees PETSc's MPI calls (a VecScatter and an\n"
                           "                                         MPI_Allreduce of known sizes); an error if it does not\n"
                           "  -net_layers ...                        another network (e.g. dense:64,relu,dense:10 for a quick run)\n"
                           "Ends with one line:\n"
                           "  summary: mode=... ranks=... params=... peak_mem_per_rank_mb=... step_time_s=... comm_bytes_per_step=... allgathers_per_step=... reduce_scatters_per_step=... stages=...\n"
                           "           microbatches=... bubble_fraction=... loss=... (the last step's loss) blas_core=...\n"
                           "  e.g. mpiexec -n 2 bin/bench_parallel -bench_mode replicated\n";

/*
  What is measured.

  peak_mem_per_rank_mb  VmHWM of /proc/self/status (the resident set's high-water mark the kernel keeps), read at the
                        end, in MiB (2^20 bytes), the largest over the ranks: the whole process (parameters, gradient,
                        Adam's two moments, replicated copies, activations, the batches, MPI's buffers, the libraries).
                        PETSc's own count of the bytes PetscMalloc() held at its peak is printed on the detail line when
                        the tracing allocator is on (-malloc_debug or -malloc_dump).
  step_time_s           wall time of one training step (TaoSolve() of one iteration: forward, loss, backward, gradient
                        reduction, Adam update), the mean over the timed steps, the largest over the ranks. The batch
                        is drawn before the step and the ranks meet at a barrier before the clock starts.
  comm_bytes_per_step   bytes sent from one rank to another during the timed steps, summed over the ranks, divided by
                        the number of timed steps. Counted here, independently of PetNet and PETSc, by defining the
                        MPI functions in this program (the PMPI profiling interface: each wrapper counts and calls
                        PMPI_Xxx). libpetsc and libpetnet call MPI through the dynamic linker, which resolves those calls
                        to the definitions of the executable first. Convention (bytes = count x MPI_Type_size):
                          point to point (Send, Isend, Ssend, Rsend, Bsend and their I and persistent forms, Sendrecv):
                            the message's bytes when the destination is another rank; a persistent request (MPI_Send_init,
                            which PetscSF uses for every VecScatter) counts at each MPI_Start/MPI_Startall;
                          collectives: the bytes that must reach some rank from another for the result, as a
                          bandwidth-optimal algorithm moves them, whatever the MPI library does inside:
                            Bcast n from the root: (p-1) n;  Reduce n: (p-1) n;  Allreduce n: 2 (p-1) n (a reduce-scatter
                            and an allgather: each rank counts 2 (p-1) n / p);  Allgather(v) of blocks c_r: (p-1) sum c_r;
                            Gather(v), Scatter(v): the blocks of the ranks other than the root;  Reduce_scatter(_block)
                            with blocks c_r: (p-1) sum c_r;  Alltoall(v,w): the blocks to other ranks;  Scan, Exscan n:
                            (p-1) n;  neighbour alltoallv: the blocks to other ranks;  Barrier: 0;
                          one-sided Put, Get, Accumulate: the bytes moved when the target is another rank.
                        A nonblocking collective counts like its blocking form. Only data in the timed steps counts:
                        drawing a batch (which moves nothing after the epoch's first batch), the barrier and the final
                        reductions of the results are outside.
  allgathers_per_step, reduce_scatters_per_step
                        calls of MPI_(I)Allgather(v) and MPI_(I)Reduce_scatter(_block) on a communicator of more than
                        one rank in the timed steps, summed over the ranks, divided by the steps (the wrappers above
                        count them): a sharded node gathers its parameters before a step that reads them and
                        reduce-scatters its gradient once a backward pass, so these count the gathers and the sums of
                        -net_parallel sharded, with and without stages (tests/bench.suite).

  The bytes of the replicated mode are 2 (p-1) 8 P for the broadcast of theta and the sum-reduce of the gradient, plus
  a few scalar all-reductions (the loss, its layout check, the gradient norm TAO takes); share/bench/parallel_volume.py
  gives the formula of every mode, and tests/bench.suite checks the replicated one to the byte.
*/

/* The MPI wrappers come first, before any PETSc header: with logging on, petsclog.h defines some MPI names as macros. */
#include <mpi.h>

typedef struct {
  double p2p, collective, onesided;  /* bytes sent to other ranks so far, by kind */
  double starts;                     /* persistent sends started (the PetscSF path) */
  double allgathers, reducescatters; /* calls of the Allgather and Reduce_scatter families on more than one rank (a
                                        sharded node's gather and gradient sum, issue 34's sharded stages) */
} CommCounter;

static CommCounter comm_sent;

/* Persistent send requests (MPI_Send_init and friends) and the bytes each start sends to another rank */
#define COMM_MAX_PERSISTENT 4096
static struct {
  MPI_Request req;
  double      bytes;
} comm_persistent[COMM_MAX_PERSISTENT];
static int comm_npersistent, comm_persistent_overflow;

static double CommTypeBytes(int count, MPI_Datatype type)
{
  int size = 0;

  if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  PMPI_Type_size(type, &size);
  return (double)count * size;
}

static int CommSize(MPI_Comm comm, int *rank)
{
  int size = 1, inter = 0;

  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return 1; /* PetNet and PETSc use no intercommunicators; counted as nothing */
  PMPI_Comm_size(comm, &size);
  if (rank) PMPI_Comm_rank(comm, rank);
  return size;
}

/* The bytes of a message to dest on comm if dest is another rank, else 0 */
static double CommRemoteBytes(int count, MPI_Datatype type, int dest, MPI_Comm comm)
{
  int rank;

  if (dest == MPI_PROC_NULL) return 0;
  if (CommSize(comm, &rank) == 1 || dest == rank) return 0;
  return CommTypeBytes(count, type);
}

static double CommBlocksToOthers(const int counts[], MPI_Datatype type, MPI_Comm comm)
{
  int    rank, size = CommSize(comm, &rank);
  double bytes = 0;

  if (size == 1) return 0;
  for (int q = 0; q < size; q++)
    if (q != rank) bytes += CommTypeBytes(counts[q], type);
  return bytes;
}

static void CommRecordPersistent(MPI_Request req, double bytes)
{
  if (comm_npersistent == COMM_MAX_PERSISTENT) {
    comm_persistent_overflow = 1;
    return;
  }
  comm_persistent[comm_npersistent].req     = req;
  comm_persistent[comm_npersistent++].bytes = bytes;
}

static void CommStartPersistent(MPI_Request req)
{
  for (int i = 0; i < comm_npersistent; i++)
    if (comm_persistent[i].req == req) {
      comm_sent.p2p += comm_persistent[i].bytes;
      if (comm_persistent[i].bytes > 0) comm_sent.starts += 1;
      return;
    }
}

/* Point to point */
int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Rsend(buf, count, type, dest, tag, comm);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Bsend(buf, count, type, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
  comm_sent.p2p += CommRemoteBytes(scount, stype, dest, comm);
  return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
  comm_sent.p2p += CommRemoteBytes(count, type, dest, comm);
  return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  int err = PMPI_Send_init(buf, count, type, dest, tag, comm, req);

  if (err == MPI_SUCCESS) CommRecordPersistent(*req, CommRemoteBytes(count, type, dest, comm));
  return err;
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  int err = PMPI_Ssend_init(buf, count, type, dest, tag, comm, req);

  if (err == MPI_SUCCESS) CommRecordPersistent(*req, CommRemoteBytes(count, type, dest, comm));
  return err;
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  int err = PMPI_Rsend_init(buf, count, type, dest, tag, comm, req);

  if (err == MPI_SUCCESS) CommRecordPersistent(*req, CommRemoteBytes(count, type, dest, comm));
  return err;
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
  int err = PMPI_Bsend_init(buf, count, type, dest, tag, comm, req);

  if (err == MPI_SUCCESS) CommRecordPersistent(*req, CommRemoteBytes(count, type, dest, comm));
  return err;
}

int MPI_Start(MPI_Request *req)
{
  CommStartPersistent(*req);
  return PMPI_Start(req);
}

int MPI_Startall(int n, MPI_Request reqs[])
{
  for (int i = 0; i < n; i++) CommStartPersistent(reqs[i]);
  return PMPI_Startall(n, reqs);
}

int MPI_Request_free(MPI_Request *req)
{
  for (int i = 0; i < comm_npersistent; i++)
    if (comm_persistent[i].req == *req) {
      comm_persistent[i] = comm_persistent[--comm_npersistent];
      break;
    }
  return PMPI_Request_free(req);
}

/* Collectives, by the convention above */
static void CommAllreduce(int count, MPI_Datatype type, MPI_Comm comm)
{
  int size = CommSize(comm, NULL);

  comm_sent.collective += 2.0 * (size - 1) * CommTypeBytes(count, type) / size;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
  CommAllreduce(count, type, comm);
  return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
  CommAllreduce(count, type, comm);
  return PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req);
}

static void CommReduce(int count, MPI_Datatype type, int root, MPI_Comm comm)
{
  int rank, size = CommSize(comm, &rank);

  if (size > 1 && rank != root) comm_sent.collective += CommTypeBytes(count, type);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
  CommReduce(count, type, root, comm);
  return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
  CommReduce(count, type, root, comm);
  return PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, req);
}

static void CommBcast(int count, MPI_Datatype type, int root, MPI_Comm comm)
{
  int rank, size = CommSize(comm, &rank);

  if (rank == root) comm_sent.collective += (size - 1) * CommTypeBytes(count, type);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
  CommBcast(count, type, root, comm);
  return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req)
{
  CommBcast(count, type, root, comm);
  return PMPI_Ibcast(buf, count, type, root, comm, req);
}

/* Allgather(v): this rank's block (the recv block at its own place when in place) to every other rank */
static void CommAllgather(const void *sbuf, int scount, MPI_Datatype stype, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
  int size = CommSize(comm, NULL);

  comm_sent.collective += (size - 1) * (sbuf == MPI_IN_PLACE ? CommTypeBytes(rcount, rtype) : CommTypeBytes(scount, stype));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
  if (CommSize(comm, NULL) > 1) comm_sent.allgathers += 1;
  CommAllgather(sbuf, scount, stype, rcount, rtype, comm);
  return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
  if (CommSize(comm, NULL) > 1) comm_sent.allgathers += 1;
  CommAllgather(sbuf, scount, stype, rcount, rtype, comm);
  return PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}

static int CommRank(MPI_Comm comm)
{
  int rank = 0;

  PMPI_Comm_rank(comm, &rank);
  return rank;
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
  if (CommSize(comm, NULL) > 1) comm_sent.allgathers += 1;
  CommAllgather(sbuf, scount, stype, sbuf == MPI_IN_PLACE ? rcounts[CommRank(comm)] : 0, rtype, comm);
  return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
  if (CommSize(comm, NULL) > 1) comm_sent.allgathers += 1;
  CommAllgather(sbuf, scount, stype, sbuf == MPI_IN_PLACE ? rcounts[CommRank(comm)] : 0, rtype, comm);
  return PMPI_Iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);
}

/* Gather(v): every rank but the root sends its block */
static void CommGather(int scount, MPI_Datatype stype, int root, MPI_Comm comm)
{
  int rank, size = CommSize(comm, &rank);

  if (size > 1 && rank != root) comm_sent.collective += CommTypeBytes(scount, stype);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
  CommGather(scount, stype, root, comm);
  return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
  CommGather(scount, stype, root, comm);
  return PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
  CommGather(scount, stype, root, comm);
  return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
  CommGather(scount, stype, root, comm);
  return PMPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req);
}

/* Scatter(v): the root sends every other rank its block */
int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
  CommBcast(scount, stype, root, comm);
  return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
  CommBcast(scount, stype, root, comm);
  return PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
  if (CommRank(comm) == root) comm_sent.collective += CommBlocksToOthers(scounts, stype, comm);
  return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
  if (CommRank(comm) == root) comm_sent.collective += CommBlocksToOthers(scounts, stype, comm);
  return PMPI_Iscatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, req);
}

/* Reduce-scatter: this rank's contribution to every other rank's block */
int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
  if (CommSize(comm, NULL) > 1) comm_sent.reducescatters += 1;
  comm_sent.collective += CommBlocksToOthers(rcounts, type, comm);
  return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
  if (CommSize(comm, NULL) > 1) comm_sent.reducescatters += 1;
  comm_sent.collective += CommBlocksToOthers(rcounts, type, comm);
  return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, type, op, comm, req);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
  if (CommSize(comm, NULL) > 1) comm_sent.reducescatters += 1;
  comm_sent.collective += (CommSize(comm, NULL) - 1) * CommTypeBytes(rcount, type);
  return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm);
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
  if (CommSize(comm, NULL) > 1) comm_sent.reducescatters += 1;
  comm_sent.collective += (CommSize(comm, NULL) - 1) * CommTypeBytes(rcount, type);
  return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, type, op, comm, req);
}

/* All-to-all: the blocks to the other ranks */
int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
  comm_sent.collective += (CommSize(comm, NULL) - 1) * (sbuf == MPI_IN_PLACE ? CommTypeBytes(rcount, rtype) : CommTypeBytes(scount, stype));
  return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
  comm_sent.collective += (CommSize(comm, NULL) - 1) * (sbuf == MPI_IN_PLACE ? CommTypeBytes(rcount, rtype) : CommTypeBytes(scount, stype));
  return PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
  comm_sent.collective += sbuf == MPI_IN_PLACE ? CommBlocksToOthers(rcounts, rtype, comm) : CommBlocksToOthers(scounts, stype, comm);
  return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
  comm_sent.collective += sbuf == MPI_IN_PLACE ? CommBlocksToOthers(rcounts, rtype, comm) : CommBlocksToOthers(scounts, stype, comm);
  return PMPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req);
}

int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[], const MPI_Datatype stypes[], void *rbuf, const int rcounts[], const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm)
{
  int rank, size = CommSize(comm, &rank);

  for (int q = 0; q < size && size > 1; q++)
    if (q != rank) comm_sent.collective += sbuf == MPI_IN_PLACE ? CommTypeBytes(rcounts[q], rtypes[q]) : CommTypeBytes(scounts[q], stypes[q]);
  return PMPI_Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm);
}

/* Scans: each rank but the last passes n on */
static void CommScan(int count, MPI_Datatype type, MPI_Comm comm)
{
  int rank, size = CommSize(comm, &rank);

  if (rank < size - 1) comm_sent.collective += CommTypeBytes(count, type);
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
  CommScan(count, type, comm);
  return PMPI_Scan(sbuf, rbuf, count, type, op, comm);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
  CommScan(count, type, comm);
  return PMPI_Exscan(sbuf, rbuf, count, type, op, comm);
}

/* Neighbourhood all-to-all on a distributed graph (PETSCSFNEIGHBOR): the blocks to neighbours other than this rank */
static void CommNeighbor(const int scounts[], MPI_Datatype stype, MPI_Comm comm)
{
  int indeg, outdeg, weighted, rank, topo;
  int sources[1024], dests[1024], sweights[1024], dweights[1024]; /* weights: ignored for an unweighted graph */

  PMPI_Topo_test(comm, &topo);
  if (topo != MPI_DIST_GRAPH) return;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
  if (indeg <= 1024 && outdeg <= 1024) PMPI_Dist_graph_neighbors(comm, indeg, sources, sweights, outdeg, dests, dweights);
  for (int q = 0; q < outdeg; q++)
    if (outdeg > 1024 || dests[q] != rank) comm_sent.collective += CommTypeBytes(scounts[q], stype);
}

int MPI_Neighbor_alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
  CommNeighbor(scounts, stype, comm);
  return PMPI_Neighbor_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}

int MPI_Ineighbor_alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
  CommNeighbor(scounts, stype, comm);
  return PMPI_Ineighbor_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req);
}

/* One-sided (PETSCSFWINDOW): the bytes moved to or from another rank */
static double CommWindowBytes(int count, MPI_Datatype type, int target, MPI_Win win)
{
  MPI_Group group, self;
  int       rank, translated;

  if (target == MPI_PROC_NULL) return 0;
  PMPI_Win_get_group(win, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &self);
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Group_translate_ranks(self, 1, &rank, group, &translated);
  PMPI_Group_free(&group);
  PMPI_Group_free(&self);
  return translated == target ? 0 : CommTypeBytes(count, type);
}

int MPI_Put(const void *obuf, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win)
{
  comm_sent.onesided += CommWindowBytes(ocount, otype, target, win);
  return PMPI_Put(obuf, ocount, otype, target, tdisp, tcount, ttype, win);
}

int MPI_Get(void *obuf, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Win win)
{
  comm_sent.onesided += CommWindowBytes(ocount, otype, target, win);
  return PMPI_Get(obuf, ocount, otype, target, tdisp, tcount, ttype, win);
}

int MPI_Accumulate(const void *obuf, int ocount, MPI_Datatype otype, int target, MPI_Aint tdisp, int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win)
{
  comm_sent.onesided += CommWindowBytes(ocount, otype, target, win);
  return PMPI_Accumulate(obuf, ocount, otype, target, tdisp, tcount, ttype, op, win);
}

#include <petnet.h>

static double CommTotal(const CommCounter *c)
{
  return c->p2p + c->collective + c->onesided;
}

/* The counts of local (this rank's) summed over the ranks (collective; its own reduction is not in any window) */
static PetscErrorCode CommSumOverRanks(MPI_Comm comm, const CommCounter *local, CommCounter *sum)
{
  PetscLogDouble d[6] = {local->p2p, local->collective, local->onesided, local->starts, local->allgathers, local->reducescatters};

  PetscFunctionBegin;
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, d, 6, MPIU_PETSCLOGDOUBLE, MPIU_SUM, comm));
  sum->p2p            = d[0];
  sum->collective     = d[1];
  sum->onesided       = d[2];
  sum->starts         = d[3];
  sum->allgathers     = d[4];
  sum->reducescatters = d[5];
  PetscFunctionReturn(0);
}

/* What this rank sent since *start, added to *window */
static void CommAddSince(const CommCounter *start, CommCounter *window)
{
  window->p2p += comm_sent.p2p - start->p2p;
  window->collective += comm_sent.collective - start->collective;
  window->onesided += comm_sent.onesided - start->onesided;
  window->starts += comm_sent.starts - start->starts;
  window->allgathers += comm_sent.allgathers - start->allgathers;
  window->reducescatters += comm_sent.reducescatters - start->reducescatters;
}

/* Bytes sent between ranks since *start, summed over the ranks */
static PetscErrorCode CommBytesSince(MPI_Comm comm, const CommCounter *start, CommCounter *sum)
{
  CommCounter local = {0};

  PetscFunctionBegin;
  CommAddSince(start, &local);
  PetscCall(CommSumOverRanks(comm, &local, sum));
  PetscFunctionReturn(0);
}

/* The resident set's high-water mark of this process (VmHWM), in bytes; PETSc's getrusage() figure without /proc */
static PetscErrorCode PeakResidentBytes(PetscLogDouble *bytes)
{
  FILE *f;
  char  line[256];
  long  kb = -1;

  PetscFunctionBegin;
  f = fopen("/proc/self/status", "r");
  if (f) {
    while (fgets(line, sizeof(line), f))
      if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    fclose(f);
  }
  if (kb >= 0)
    *bytes = 1024.0 * kb;
  else
    PetscCall(PetscMemoryGetMaximumUsage(bytes));
  PetscFunctionReturn(0);
}

/*
  The counter must see the MPI calls made inside libpetsc: a VecScatter from a distributed Vec of M entries to a full
  copy on every rank (PetscSF with persistent requests) moves (p-1) M scalars forward and as many in reverse, and an
  MPI_Allreduce of 3 reals counts 2 (p-1) 3 reals. The first use of a PetscSF also sets it up (the ranks send each
  other their index lists: a few kB here), which is why the training's warm-up step is not counted.
*/
static PetscErrorCode CommSelfTest(MPI_Comm comm)
{
  PetscMPIInt size, rank;
  PetscInt    M;
  Vec         x, rep;
  IS          from, to;
  VecScatter  scatter;
  CommCounter start, fwd, rev, red;
  PetscReal   three[3] = {1, 2, 3};
  double      expect;

  PetscFunctionBegin;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  M = 1000 + 7 * size;
  PetscCall(VecCreateMPI(comm, PETSC_DECIDE, M, &x));
  PetscCall(VecSet(x, 1.0));
  PetscCall(VecCreateMPI(comm, M, PETSC_DETERMINE, &rep));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, M, 0, 1, &from));
  PetscCall(ISCreateStride(PETSC_COMM_SELF, M, rank * M, 1, &to));
  PetscCall(VecScatterCreate(x, from, rep, to, &scatter));
  /* The first use sets up the PetscSF (its ranks exchange their index lists): not part of the scatter's traffic */
  PetscCall(VecScatterBegin(scatter, x, rep, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(scatter, x, rep, INSERT_VALUES, SCATTER_FORWARD));
  start = comm_sent;
  PetscCall(VecScatterBegin(scatter, x, rep, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(scatter, x, rep, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(CommBytesSince(comm, &start, &fwd));
  start = comm_sent;
  PetscCall(VecScatterBegin(scatter, rep, x, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(VecScatterEnd(scatter, rep, x, ADD_VALUES, SCATTER_REVERSE));
  PetscCall(CommBytesSince(comm, &start, &rev));
  start = comm_sent;
  PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, three, 3, MPIU_REAL, MPIU_SUM, comm));
  PetscCall(CommBytesSince(comm, &start, &red));
  expect = (double)(size - 1) * M * sizeof(PetscScalar);
  PetscCall(PetscPrintf(comm, "selftest: scatter_forward_bytes=%.0f scatter_reverse_bytes=%.0f expected=%.0f persistent_starts=%.0f allreduce_bytes=%.0f expected=%.0f\n", CommTotal(&fwd), CommTotal(&rev), expect, fwd.starts + rev.starts,
                        CommTotal(&red), 2.0 * (size - 1) * 3 * sizeof(PetscReal)));
  PetscCheck(CommTotal(&fwd) == expect && CommTotal(&rev) == expect, comm, PETSC_ERR_PLIB,
             "The byte counter saw %.0f and %.0f bytes in a VecScatter that moves %.0f: the MPI wrappers of this program do not see PETSc's calls (link the program so that libpetsc's MPI calls resolve to its definitions)", CommTotal(&fwd),
             CommTotal(&rev), expect);
  PetscCheck(size == 1 || fwd.starts > 0, comm, PETSC_ERR_PLIB, "The VecScatter moved its bytes without MPI_Start/MPI_Startall: PetscSF's path differs from the one this counter expects");
  PetscCheck(CommTotal(&red) == 2.0 * (size - 1) * 3 * sizeof(PetscReal), comm, PETSC_ERR_PLIB, "The byte counter saw %.0f bytes in an MPI_Allreduce of 3 reals", CommTotal(&red));
  PetscCall(VecScatterDestroy(&scatter));
  PetscCall(ISDestroy(&from));
  PetscCall(ISDestroy(&to));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&rep));
  PetscFunctionReturn(0);
}

typedef struct {
  Net       net;
  Loss      loss;
  Vec       X, T;  /* the current batch (owned by the Dataset) */
  Vec       Y, dY; /* the Net's output and its cotangent, for the batch's local size */
  PetscReal f;     /* the loss of the last step */
} BenchCtx;

/* The mini-batch objective TAO sees, as the Trainer's: f = mean loss of the batch, G = its gradient */
static PetscErrorCode BenchObjective(Tao tao, Vec theta, PetscReal *f, Vec G, void *ptr)
{
  BenchCtx           *ctx = (BenchCtx *)ptr;
  NetPipelineSchedule schedule;

  PetscFunctionBegin;
  PetscCall(NetSetParameters(ctx->net, theta));
  PetscCall(NetGetPipelineSchedule(ctx->net, &schedule));
  if (schedule == NET_PIPELINE_1F1B) { /* the loss of each micro-batch inside the walk */
    PetscCall(VecZeroEntries(G));
    PetscCall(LossNetForwardBackward(ctx->loss, ctx->net, ctx->X, ctx->T, ctx->Y, f, NULL, G));
    ctx->f = *f;
    PetscFunctionReturn(0);
  }
  PetscCall(NetForward(ctx->net, ctx->X, ctx->Y));
  PetscCall(LossEvaluate(ctx->loss, ctx->Y, ctx->T, f, ctx->dY));
  PetscCall(VecZeroEntries(G));
  PetscCall(NetBackward(ctx->net, ctx->dY, NULL, G));
  ctx->f = *f;
  PetscFunctionReturn(0);
}

/* Output Vecs for the local samples of batch X (made again only if that number changes) */
static PetscErrorCode BenchEnsureOutputs(BenchCtx *ctx)
{
  PetNetShape in;
  PetscInt    nin, nx, n = -1, ny = -1, outsize;
  PetNetShape out;

  PetscFunctionBegin;
  PetscCall(NetGetInputShape(ctx->net, &in));
  PetscCall(NetGetOutputShape(ctx->net, &out));
  PetscCall(PetNetShapeSize(&in, &nin));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCall(VecGetLocalSize(ctx->X, &nx));
  n = nx / nin;
  if (ctx->Y) PetscCall(VecGetLocalSize(ctx->Y, &ny));
  if (ny == n * outsize) PetscFunctionReturn(0);
  PetscCall(VecDestroy(&ctx->Y));
  PetscCall(VecDestroy(&ctx->dY));
  PetscCall(NetCreateVecs(ctx->net, n, NULL, &ctx->Y));
  PetscCall(VecDuplicate(ctx->Y, &ctx->dY));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm        comm;
  PetscMPIInt     size;
  char            dir[PETSC_MAX_PATH_LEN] = "/usr/share/datasets/fashion-mnist", images[PETSC_MAX_PATH_LEN], labels[PETSC_MAX_PATH_LEN];
  NetParallelType mode                    = NET_PARALLEL_REPLICATED;
  char            modename[64]            = "replicated";
  PetscBool       pipeline                = PETSC_FALSE;
  PetscInt        steps = 5, batch = 256, nparams, nbatches, nstages, nmicro;
  PetscLogDouble  busy = 0, wall = 0, bubble = 0;
  PetscBool       selftest      = PETSC_FALSE, tracing, split;
  char            partition[64] = "";
  PetscReal       reference     = 0;
  Dataset         train;
  PetNetShape     sample;
  BenchCtx        ctx = {0};
  Vec             theta, G;
  Tao             tao;
  CommCounter     start, window = {0}, sum;
  PetscLogDouble  t0, t1, seconds = 0, peak, mallocpeak = 0;
  PetscReal       f0 = 0;
  char            spec[1024];

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscOptionsBegin(comm, NULL, "Parallel-mode benchmark", NULL);
  PetscCall(PetscOptionsString("-bench_mode", "The Net's parallel mode (replicated, sharded, model, tensor, sequence, subgraph), or pipeline", "NetSetParallel", modename, modename, sizeof(modename), NULL));
  PetscCall(PetscStrcmp(modename, "pipeline", &pipeline));
  if (!pipeline) {
    PetscBool found;

    PetscCall(PetscEnumFind(NetParallelTypes, modename, (PetscEnum *)&mode, &found));
    PetscCheck(found, comm, PETSC_ERR_ARG_UNKNOWN_TYPE, "-bench_mode %s is not a mode: give replicated, sharded, model, tensor, sequence, subgraph or pipeline", modename);
  }
  PetscCall(PetNetOptionsInt("-bench_steps", "Timed Adam steps (after one warm-up step)", NULL, steps, &steps, NULL));
  PetscCall(PetNetOptionsInt("-bench_batch", "Global batch size", NULL, batch, &batch, NULL));
  PetscCall(PetscOptionsString("-bench_dir", "Folder with the Fashion-MNIST IDX files", NULL, dir, dir, sizeof(dir), NULL));
  PetscCall(PetscOptionsBool("-bench_selftest", "Check first that the byte counter sees PETSc's MPI calls", NULL, selftest, &selftest, NULL));
  PetscCall(PetscOptionsString("-bench_partition", "Split node layer2 (the 8192x8192 layer) over a PxQ grid of ranks (its -layer2_partition)", "LayerSetPartition", partition, partition, sizeof(partition), &split));
  PetscCall(PetscOptionsReal("-bench_reference_mb", "Peak memory of the 1-rank replicated run, MiB: print the ratio to it", NULL, reference, &reference, NULL));
  PetscOptionsEnd();
  /* the Net reads node layer2's partition from the options (its prefix "layer2_"), so a partition given there wins */
  if (split) {
    PetscBool given;

    PetscCall(PetscOptionsHasName(NULL, NULL, "-layer2_partition", &given));
    PetscCheck(!given, comm, PETSC_ERR_ARG_INCOMP, "-bench_partition %s and -layer2_partition both split node layer2: give one of them", partition);
    PetscCall(PetscOptionsSetValue(NULL, "-layer2_partition", partition));
  }
  PetscCheck(steps >= 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "-bench_steps %" PetscInt_FMT ": give at least 1", steps);
  PetscCheck(batch >= size, comm, PETSC_ERR_ARG_OUTOFRANGE, "-bench_batch %" PetscInt_FMT " gives some of the %d ranks no sample: give at least %d", batch, size, size);
  PetscCheck(!comm_persistent_overflow, comm, PETSC_ERR_PLIB, "More than %d persistent MPI requests alive at once: raise COMM_MAX_PERSISTENT", COMM_MAX_PERSISTENT);
  if (selftest) PetscCall(CommSelfTest(comm));

  /* Only the samples of the 1 + steps batches are read (the default limit), so the data take little memory */
  PetscCall(DatasetCreate(comm, &train));
  PetscCall(DatasetSetOptionsPrefix(train, "train_"));
  PetscCall(DatasetSetType(train, DATASETIDX));
  PetscCall(PetscSNPrintf(images, sizeof(images), "%s/train-images-idx3-ubyte.gz", dir));
  PetscCall(PetscSNPrintf(labels, sizeof(labels), "%s/train-labels-idx1-ubyte.gz", dir));
  PetscCall(DatasetIDXSetFiles(train, images, labels));
  PetscCall(DatasetSetBatchSize(train, batch));
  PetscCall(DatasetSetLimit(train, (steps + 1) * batch));
  PetscCall(DatasetSetShuffle(train, PETSC_TRUE));
  PetscCall(DatasetSetSeed(train, 1));
  PetscCall(DatasetSetFromOptions(train));
  PetscCall(DatasetSetUp(train));
  PetscCall(DatasetGetNumBatches(train, &nbatches));
  PetscCheck(nbatches >= steps + 1, comm, PETSC_ERR_ARG_OUTOFRANGE, "The training set gives %" PetscInt_FMT " batches, fewer than the %" PetscInt_FMT " steps and the warm-up: raise -train_dataset_limit", nbatches, steps);
  PetscCall(DatasetGetSampleShape(train, &sample));

  PetscCall(NetCreate(comm, &ctx.net));
  if (mode == NET_PARALLEL_SUBGRAPH) /* two branches of the same cost joined by add, then a head (-net_graph replaces it) */
    PetscCall(NetSetGraph(ctx.net, "a1=dense:2048<-input;a2=relu;a3=dense:2048;a4=relu;a5=dense:2048;b1=dense:2048<-input;b2=relu;b3=dense:2048;b4=relu;b5=dense:2048;j=add<-a5,b5;r=relu;out=dense:10"));
  else
    PetscCall(NetSetLayers(ctx.net, "dense:8192,relu,dense:8192,relu,dense:10"));
  PetscCall(NetSetInputShape(ctx.net, &sample));
  PetscCall(NetSetParallel(ctx.net, mode));
  PetscCall(NetSetFromOptions(ctx.net));
  PetscCall(NetSetUp(ctx.net));
  PetscCall(NetGetParallel(ctx.net, &mode));
  PetscCall(NetGetStages(ctx.net, &nstages));
  PetscCall(NetGetMicroBatches(ctx.net, &nmicro));
  PetscCheck(!pipeline || nstages > 1 || nmicro > 1, comm, PETSC_ERR_ARG_WRONG, "-bench_mode pipeline needs -net_stages S (> 1) and/or -net_microbatches M (> 1)");
  PetscCall(NetGetNumParameters(ctx.net, &nparams));
  PetscCall(NetGetSpec(ctx.net, sizeof(spec), spec));
  PetscCall(LossCreate(comm, &ctx.loss));
  PetscCall(LossSetType(ctx.loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(ctx.loss));

  /* Adam's two moments are VecDuplicate()s of theta: distributed like the parameters, in every mode */
  PetscCall(NetGetParameters(ctx.net, &theta));
  PetscCall(NetCreateParameterVec(ctx.net, &G));
  PetscCall(TaoCreate(comm, &tao));
  PetscCall(TaoSetType(tao, TAOADAM));
  PetscCall(TaoSetSolution(tao, theta));
  PetscCall(TaoSetObjectiveAndGradient(tao, G, BenchObjective, &ctx));
  PetscCall(TaoSetFromOptions(tao));
  PetscCall(TaoSetMaximumIterations(tao, 1)); /* one TaoSolve() = one step; Adam's state and step count carry over */

  for (PetscInt s = 0; s <= steps; s++) { /* step 0 is the warm-up */
    PetscCall(DatasetGetBatch(train, s, &ctx.X, &ctx.T));
    PetscCall(BenchEnsureOutputs(&ctx));
    PetscCallMPI(MPI_Barrier(comm));
    start = comm_sent;
    PetscCall(PetscTime(&t0));
    PetscCall(TaoSolve(tao));
    PetscCall(PetscTime(&t1));
    if (s == 0) {
      f0 = ctx.f;
      PetscCall(NetGetPipelineTimes(ctx.net, NULL, NULL)); /* the counters restart after the warm-up */
      continue;
    }
    seconds += t1 - t0;
    CommAddSince(&start, &window);
  }
  PetscCheck(!comm_persistent_overflow, comm, PETSC_ERR_PLIB, "More than %d persistent MPI requests alive at once: raise COMM_MAX_PERSISTENT", COMM_MAX_PERSISTENT);

  /* The results, reduced outside the measured windows */
  PetscCall(NetGetPipelineTimes(ctx.net, &busy, &wall));
  bubble = wall > 0 ? 1.0 - busy / wall : 0; /* this rank's idle share of its walks, then the mean over the ranks */
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &bubble, 1, MPIU_PETSCLOGDOUBLE, MPI_SUM, comm));
  bubble /= size;
  PetscCall(CommSumOverRanks(comm, &window, &sum));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &seconds, 1, MPIU_PETSCLOGDOUBLE, MPI_MAX, comm));
  PetscCall(PeakResidentBytes(&peak));
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &peak, 1, MPIU_PETSCLOGDOUBLE, MPI_MAX, comm));
  PetscCall(PetscMallocGetDebug(&tracing, NULL, NULL));
  if (tracing) {
    PetscCall(PetscMallocGetMaximumUsage(&mallocpeak));
    PetscCall(MPIU_Allreduce(MPI_IN_PLACE, &mallocpeak, 1, MPIU_PETSCLOGDOUBLE, MPI_MAX, comm));
  }

  PetscCall(PetscPrintf(comm, "detail: net=%s loss_first=%.6f loss_last=%.6f p2p_bytes_per_step=%.0f collective_bytes_per_step=%.0f onesided_bytes_per_step=%.0f persistent_starts_per_step=%.1f", spec, (double)f0, (double)ctx.f, sum.p2p / steps,
                        sum.collective / steps, sum.onesided / steps, sum.starts / steps));
  if (tracing) PetscCall(PetscPrintf(comm, " petsc_malloc_peak_mb=%.1f", mallocpeak / 1048576.0));
  if (reference > 0) PetscCall(PetscPrintf(comm, " of_reference=%.3f", peak / 1048576.0 / (double)reference));
  PetscCall(PetscPrintf(comm, "\n"));
  PetscCall(PetscPrintf(comm, "summary: mode=%s ranks=%d params=%" PetscInt_FMT " peak_mem_per_rank_mb=%.1f step_time_s=%.4g comm_bytes_per_step=%.0f allgathers_per_step=%.1f reduce_scatters_per_step=%.1f",
                        pipeline ? "pipeline" : NetParallelTypes[mode], size, nparams, peak / 1048576.0, seconds / steps, CommTotal(&sum) / steps, sum.allgathers / steps, sum.reducescatters / steps));
  PetscCall(PetscPrintf(comm, " stages=%" PetscInt_FMT " microbatches=%" PetscInt_FMT " bubble_fraction=%.3f ideal_bubble=%.3f loss=%.12g", nstages, nmicro, (double)bubble, (double)(nstages - 1) / (double)(nmicro + nstages - 1), (double)ctx.f));
  { /* the BLAS's kernels (issue 31): a rate is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }

  PetscCall(TaoDestroy(&tao));
  PetscCall(VecDestroy(&G));
  PetscCall(VecDestroy(&ctx.Y));
  PetscCall(VecDestroy(&ctx.dY));
  PetscCall(LossDestroy(&ctx.loss));
  PetscCall(NetDestroy(&ctx.net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(PetscFinalize());
  return 0;
}
