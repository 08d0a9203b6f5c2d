/*
  A damaged HDF5 file can crash or hang the HDF5 library itself (1.10.8: H5Aexists() reads past its buffer on a
  damaged attribute message, H5Aread() of a variable-length string whose global-heap reference is damaged loops
  forever; fuzz/known-library-hangs/). PetNet's readers check every size and checksum they read, but these happen while
  HDF5 decodes an object header, before any value reaches PetNet. So before a reader opens a file, rank 0 lets a child
  process (fork()) walk every object header of the file the way a reader would: every group and dataset (H5Ovisit),
  every attribute of each, read whole (variable-length ones included), each dataset's type, extent, layout and chunk
  index. The child does nothing but that, with the default signal handlers (not PETSc's, which would abort the job),
  and leaves with _exit(). If it dies (a signal) or does not finish in time, the file is refused with an error that
  names it; if it finishes, the reader goes on and reports any ordinary damage itself. Errors HDF5 reports cleanly are
  not the walk's concern. A hang is caught for certain (the same bytes, the same loop); an over-read only when it
  faults in the child, which depends on what lies past HDF5's buffer there (the one kept in
  fuzz/known-library-hangs/h5model/ reads past its buffer silently in the child and faults in the parent).

  The child must make no MPI call, directly or through HDF5 (Debian's HDF5 is the parallel build: H5close() would close
  the parent's MPI-IO files collectively and corrupt the job's shared-memory transport), so it never closes the
  library and leaves with _exit(); fork() is then fine with Open MPI's shared-memory and TCP transports. Options: -petnet_hdf5_check <bool> (default true), -petnet_hdf5_check_timeout <seconds> (20).
*/
#include <petnetsys.h>
#include <petsc/private/petscimpl.h>
#if defined(PETSC_HAVE_HDF5)
#include <hdf5.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HDF5CHECK_MAX_ATTR_BYTES (64 * 1024 * 1024) /* an attribute larger than this is inspected, not read */
#define HDF5CHECK_MAX_CHUNKS     4096               /* chunks of a dataset whose index entries are read one by one */

/* child: read one attribute whole in its native type; variable-length ones only when ctx is non-NULL (decoded, then
   reclaimed) */
static herr_t HDF5CheckAttribute(hid_t loc, const char *name, const H5A_info_t *info, void *ctx)
{
  hid_t    a = H5Aopen(loc, name, H5P_DEFAULT), t = -1, mt = -1, s = -1;
  hssize_t n;
  size_t   sz;

  (void)info;
  if (a < 0) return 0;
  t = H5Aget_type(a);
  s = H5Aget_space(a);
  if (t >= 0 && s >= 0 && (mt = H5Tget_native_type(t, H5T_DIR_ASCEND)) >= 0 && (n = H5Sget_simple_extent_npoints(s)) >= 0 && (sz = H5Tget_size(mt)) > 0 && (double)n * (double)sz <= HDF5CHECK_MAX_ATTR_BYTES) {
    const PetscBool vlen = (PetscBool)(H5Tdetect_class(mt, H5T_VLEN) > 0 || H5Tis_variable_str(mt) > 0);
    void           *buf  = vlen && !ctx ? NULL : calloc((size_t)n ? (size_t)n : 1, sz);

    if (buf && H5Aread(a, mt, buf) >= 0 && (H5Tdetect_class(mt, H5T_VLEN) > 0 || H5Tis_variable_str(mt) > 0)) (void)H5Dvlen_reclaim(mt, s, H5P_DEFAULT, buf);
    free(buf);
  }
  if (mt >= 0) H5Tclose(mt);
  if (t >= 0) H5Tclose(t);
  if (s >= 0) H5Sclose(s);
  H5Aclose(a);
  return 0;
}

/* child: a dataset's type, extent, creation properties, storage size and chunk index */
static void HDF5CheckDataset(hid_t loc, const char *name)
{
  hid_t d = H5Dopen2(loc, name, H5P_DEFAULT), t, s, plist;

  if (d < 0) return;
  t     = H5Dget_type(d);
  s     = H5Dget_space(d);
  plist = H5Dget_create_plist(d);
  (void)H5Dget_storage_size(d);
  if (plist >= 0 && s >= 0 && H5Pget_layout(plist) == H5D_CHUNKED) {
    hsize_t nchunks = 0;

    if (H5Dget_num_chunks(d, s, &nchunks) >= 0)
      for (hsize_t i = 0; i < nchunks && i < HDF5CHECK_MAX_CHUNKS; i++) {
        hsize_t  offset[H5S_MAX_RANK], size;
        unsigned mask;
        haddr_t  addr;

        (void)H5Dget_chunk_info(d, s, i, offset, &mask, &addr, &size);
      }
  }
  if (plist >= 0) H5Pclose(plist);
  if (t >= 0) H5Tclose(t);
  if (s >= 0) H5Sclose(s);
  H5Dclose(d);
}

/* child: an object's attributes (ctx non-NULL: only the groups below the root, the readers' first stop) and a
   dataset's description */
static PetscBool checkvlen; /* the child's: read variable-length attributes too */

static herr_t HDF5CheckObject(hid_t root, const char *name, const H5O_info_t *info, void *ctx)
{
  hid_t o;

  if (ctx && (info->type != H5O_TYPE_GROUP || !strcmp(name, "."))) return 0;
  if ((o = H5Oopen(root, name, H5P_DEFAULT)) >= 0) { /* a lookup decodes every attribute message of the header (PetNet's readers start with "version"), then each is read */
    (void)H5Aexists(o, "version");
    (void)H5Aexists(o, "petnet: a name no attribute has");
    (void)H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, HDF5CheckAttribute, checkvlen ? (void *)o : NULL);
    H5Oclose(o);
  }
  if (!ctx && info->type == H5O_TYPE_DATASET) HDF5CheckDataset(root, name);
  return 0;
}

/* the child's whole life: walk the file, then _exit(0) (a file HDF5 cannot open is the reader's to report) */
static void HDF5CheckChild(const char file[], double timeout, PetscBool readvlen)
{
  const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGALRM};
  hid_t     fapl, fid;

  for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) signal(signals[i], SIG_DFL);
  alarm((unsigned)(timeout + 2)); /* in case the parent is gone */
  checkvlen = readvlen;
  /* buffers of 4 KB and more in mappings of their own, so that an over-read past one is more likely to leave mapped
     memory and fault here (a damaged header that made a fresh process read past its buffer silently faulted so) */
  (void)mallopt(M_MMAP_THRESHOLD, 4096);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_sec2(fapl);
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(fapl, 0, 1);
#endif
  fid = H5Fopen(file, H5F_ACC_RDONLY, fapl);
  if (fid >= 0) {
    (void)H5Ovisit2(fid, H5_INDEX_NAME, H5_ITER_NATIVE, HDF5CheckObject, (void *)fapl, H5O_INFO_BASIC); /* the groups first, */
    (void)H5Ovisit2(fid, H5_INDEX_NAME, H5_ITER_NATIVE, HDF5CheckObject, NULL, H5O_INFO_BASIC);         /* then everything */
    H5Fclose(fid);
  }
  _exit(0);
}

/* rank 0: fork the walk and wait for it; msg empty when the file passed */
static PetscErrorCode HDF5CheckRun(const char file[], const char what[], PetscBool readvlen, PetscReal timeout, size_t len, char msg[])
{
  pid_t           pid;
  int             status = 0;
  struct timespec pause  = {0, 1000000}; /* 1 ms */
  PetscLogDouble  start, now;

  PetscFunctionBegin;
  msg[0] = 0;
  (void)fflush(stdout);
  (void)fflush(stderr);
  pid = fork();
  if (pid < 0) PetscFunctionReturn(0); /* no process to spare: the reader goes on unchecked */
  if (pid == 0) HDF5CheckChild(file, (double)timeout, readvlen);
  PetscCall(PetscTime(&start));
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);

    if (w == pid) break;
    if (w < 0 && errno != EINTR) PetscFunctionReturn(0); /* SIGCHLD ignored by the application: no verdict */
    PetscCall(PetscTime(&now));
    if (now - start > timeout) {
      (void)kill(pid, SIGKILL);
      (void)waitpid(pid, &status, 0);
      PetscCall(PetscSNPrintf(msg, len,
                              "%s %s is damaged: the HDF5 library did not finish reading its object headers (attributes, dataset descriptions) within %.1f s (-petnet_hdf5_check_timeout) and was stopped; HDF5 1.10 loops forever on some damaged "
                              "headers. Use another copy of the file or write it again",
                              what, file, (double)timeout));
      PetscFunctionReturn(0);
    }
    (void)nanosleep(&pause, NULL);
  }
  if (WIFSIGNALED(status))
    PetscCall(PetscSNPrintf(msg, len,
                            "%s %s is damaged: the HDF5 library crashed (signal %d, %s) reading its object headers (attributes, dataset descriptions) in a checking process, so the file was not opened here; HDF5 1.10 reads past its buffers on some "
                            "damaged headers. Use another copy of the file or write it again",
                            what, file, WTERMSIG(status), strsignal(WTERMSIG(status))));
  PetscFunctionReturn(0);
}

#endif

/*@C
  PetNetCheckHDF5File - checks, in a separate process, that the HDF5 library can read every object header of a file
  (groups, datasets, attributes) without crashing or hanging, before the file is opened in this process

  Collective

  Input Parameters:
+ comm - the communicator of the ranks that will read the file (rank 0 runs the check, the others wait for its verdict)
. file - the file's name
. what - what the file is, for the error message (e.g. "Model file")
- vlen - whether to read variable-length attributes as well (PETSC_TRUE for a reader that reads them; a reader that
         refuses them unread passes PETSC_FALSE, so that the check does not stop on a loop the reader never enters)

  Options Database Keys:
+ -petnet_hdf5_check <bool> - run the check (default true)
- -petnet_hdf5_check_timeout <seconds> - how long the checking process may take (default 20)

  Notes:
  HDF5 1.10 crashes on some damaged object headers (it reads past its buffers decoding attribute messages) and loops
  forever on others (a variable-length string whose heap reference is damaged), inside the library, before any value
  reaches the caller. This function forks a process that walks the whole file as a reader would (every group and
  dataset, every attribute read whole, each dataset's type, extent, layout and chunk index) and refuses the file with
  a clear error if that process dies or runs out of time. A file the walk reads without incident passes, even if HDF5
  reported errors about it: those the reader reports itself. It costs one fork() and the walk (milliseconds for a
  model file). PetNet's HDF5 model and dataset readers call it before they open a file.

  Level: developer

.seealso: `NetLoad()`, `DATASETHDF5`
@*/
PetscErrorCode PetNetCheckHDF5File(MPI_Comm comm, const char file[], const char what[], PetscBool vlen)
{
  PetscMPIInt rank;
  PetscBool   check   = PETSC_TRUE;
  PetscReal   timeout = 20.0;
  char        msg[1024];

  PetscFunctionBegin;
  PetscValidCharPointer(file, 2);
  PetscValidCharPointer(what, 3);
#if !defined(PETSC_HAVE_HDF5)
  PetscFunctionReturn(0); /* nothing reads HDF5 */
#endif
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-petnet_hdf5_check", &check, NULL));
  if (!check) PetscFunctionReturn(0);
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-petnet_hdf5_check_timeout", &timeout, NULL));
  PetscCheck(timeout > 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-petnet_hdf5_check_timeout %g: give a positive number of seconds (or -petnet_hdf5_check 0 to skip the check)", (double)timeout);
  PetscCallMPI(MPI_Comm_rank(comm, &rank));
  msg[0] = 0;
#if defined(PETSC_HAVE_HDF5)
  if (!rank) PetscCall(HDF5CheckRun(file, what, vlen, timeout, sizeof(msg), msg));
#endif
  PetscCallMPI(MPI_Bcast(msg, sizeof(msg), MPI_CHAR, 0, comm));
  msg[sizeof(msg) - 1] = 0;
  PetscCheck(!msg[0], comm, PETSC_ERR_FILE_UNEXPECTED, "%s", msg);
  PetscFunctionReturn(0);
}
