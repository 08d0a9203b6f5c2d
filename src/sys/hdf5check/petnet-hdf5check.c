/*
  petnet-hdf5check: walks every object header of an HDF5 file the way PetNet's readers would, so that the HDF5 library
  crashes or hangs here, if it does, and not in the reader. PetNetCheckHDF5File() (../hdf5check.c) runs it on rank 0
  before a reader opens a file and refuses the file when it dies or runs out of time.

    petnet-hdf5check [-vlen] [-timeout SECONDS] [-verbose] [-max_guarded N] FILE
    petnet-hdf5check -selftest overread|useafterfree   (must die of SIGSEGV: the guard pages work)

  The walk: every group and dataset (H5Ovisit, the groups below the root first, as the readers start there), on each
  the attribute lookups the readers make (H5Aexists decodes every attribute message of the header) and every
  attribute read whole in its native type (variable-length ones only with -vlen: a reader that refuses them unread
  must not be stopped by a loop it never enters), and of each dataset its type, extent, creation properties, storage
  size and chunk index. Errors HDF5 reports cleanly are not the walk's concern (the reader reports them).

  Exit status: 0 when the walk finished (a file HDF5 cannot open included), 2 for a usage error. A crash is a signal.
  HDF5 1.10.8 reads past its buffers on some damaged attribute messages; whether that faults depends on what lies
  past the buffer, so the program allocates through a guard-page allocator (guardmalloc.c): once the file is opened,
  every block ends where 64 KB of inaccessible pages begin (its size rounded up to 16 bytes), and a read past it
  faults. -max_guarded N guards at most N blocks at once (the fallback a file too large for vm.max_map_count takes;
  for tests). It links HDF5 alone (the same library as PETSc), makes no MPI call and never initialises PETSc.
*/
#include <hdf5.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guardmalloc.h"

#define HDF5CHECK_MAX_ATTR_BYTES (64 * 1024 * 1024) /* an attribute larger than this is inspected, not read */
#define HDF5CHECK_MAX_CHUNKS     4096               /* chunks of a dataset whose index entries are read one by one */

typedef struct {
  int  groups_only; /* first pass: the groups below the root (the readers' first stop) */
  int  vlen;        /* read variable-length attributes too */
  long objects;     /* objects visited */
} Walk;

/* read one attribute whole in its native type; variable-length ones only with -vlen (decoded, then reclaimed) */
static herr_t CheckAttribute(hid_t loc, const char *name, const H5A_info_t *info, void *ctx)
{
  const Walk *walk = (const Walk *)ctx;
  hid_t       a = H5Aopen(loc, name, H5P_DEFAULT), t = -1, mt = -1, s = -1;
  hssize_t    n;
  size_t      sz;

  (void)info;
  if (a < 0) return 0;
  t = H5Aget_type(a);
  s = H5Aget_space(a);
  if (t >= 0 && s >= 0 && (mt = H5Tget_native_type(t, H5T_DIR_ASCEND)) >= 0 && (n = H5Sget_simple_extent_npoints(s)) >= 0 && (sz = H5Tget_size(mt)) > 0 && (double)n * (double)sz <= HDF5CHECK_MAX_ATTR_BYTES) {
    const int vlen = H5Tdetect_class(mt, H5T_VLEN) > 0 || H5Tis_variable_str(mt) > 0;
    void     *buf  = vlen && !walk->vlen ? NULL : calloc(n ? (size_t)n : 1, sz);

    if (buf && H5Aread(a, mt, buf) >= 0 && vlen) (void)H5Dvlen_reclaim(mt, s, H5P_DEFAULT, buf);
    free(buf);
  }
  if (mt >= 0) H5Tclose(mt);
  if (t >= 0) H5Tclose(t);
  if (s >= 0) H5Sclose(s);
  H5Aclose(a);
  return 0;
}

/* a dataset's type, extent, creation properties, storage size and chunk index */
static void CheckDataset(hid_t loc, const char *name)
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

/* an object's attributes (a lookup decodes every attribute message of the header: PetNet's readers start with
   "version"; then each is read) and a dataset's description */
static herr_t CheckObject(hid_t root, const char *name, const H5O_info_t *info, void *ctx)
{
  Walk *walk = (Walk *)ctx;
  hid_t o;

  if (walk->groups_only && (info->type != H5O_TYPE_GROUP || !strcmp(name, "."))) return 0;
  walk->objects++;
  if ((o = H5Oopen(root, name, H5P_DEFAULT)) >= 0) {
    (void)H5Aexists(o, "version");
    (void)H5Aexists(o, "petnet: a name no attribute has");
    (void)H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, CheckAttribute, walk);
    H5Oclose(o);
  }
  if (!walk->groups_only && info->type == H5O_TYPE_DATASET) CheckDataset(root, name);
  return 0;
}

/* an over-read and a use after free (of a block larger than 16 KB, see guardmalloc.c) that must fault (sizes through
   volatile: the compiler must not see the bug it would warn about) */
static int SelfTest(const char what[])
{
  volatile size_t n = strcmp(what, "overread") ? 100000 : 96, at = n; /* 96: a multiple of 16, the block ends at its guard page */
  volatile char  *p = (volatile char *)malloc(n), c = 0;

  if (!strcmp(what, "overread"))
    c = p[at];
  else if (!strcmp(what, "useafterfree")) {
    volatile uintptr_t addr = (uintptr_t)p; /* read back after the free through an integer (-Wuse-after-free) */

    free((void *)p);
    c = *(volatile char *)addr;
  } else
    return 2;
  (void)c;
  return 0; /* did not fault: the guard is broken */
}

int main(int argc, char **argv)
{
  const int   signals[]  = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGALRM};
  Walk        walk       = {0, 0, 0};
  double      timeout    = 0;
  int         verbose    = 0;
  long        maxguarded = -1;
  const char *file       = NULL;
  sigset_t    none;
  hid_t       fapl, fid;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-vlen"))
      walk.vlen = 1;
    else if (!strcmp(argv[i], "-verbose"))
      verbose = 1;
    else if (!strcmp(argv[i], "-timeout") && i + 1 < argc)
      timeout = atof(argv[++i]);
    else if (!strcmp(argv[i], "-max_guarded") && i + 1 < argc)
      maxguarded = atol(argv[++i]); /* tests the fallback */
    else if (!strcmp(argv[i], "-selftest") && i + 1 < argc) {
      GuardEnable(-1);
      return SelfTest(argv[++i]);
    } else if (argv[i][0] != '-' && !file)
      file = argv[i];
    else
      file = NULL, i = argc;
  }
  if (!file) {
    fprintf(stderr, "usage: %s [-vlen] [-timeout SECONDS] [-verbose] [-max_guarded N] FILE\n", argv[0]);
    return 2;
  }
  /* a crash must end the process with its signal, whatever the parent had blocked or ignored */
  for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) signal(signals[i], SIG_DFL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (timeout > 0) alarm((unsigned)(timeout + 2)); /* in case the parent is gone */
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  /* the library's start-up reads no file: it allocates from the C library (some 3000 blocks fewer to guard). Then
     HDF5's free lists are emptied and kept empty, so that every block HDF5 decodes the file into comes from the guard
     pages and goes back to them when freed (a use after free faults too: the known crasher's read faults so) */
  (void)H5open();
  (void)H5set_free_list_limits(0, 0, 0, 0, 0, 0);
  (void)H5garbage_collect();
  GuardEnable(maxguarded);
  fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_sec2(fapl);
#if H5_VERSION_GE(1, 10, 7)
  H5Pset_file_locking(fapl, 0, 1);
#endif
  fid = H5Fopen(file, H5F_ACC_RDONLY, fapl);
  if (fid >= 0) {
    walk.groups_only = 1; /* the groups first, */
    (void)H5Ovisit2(fid, H5_INDEX_NAME, H5_ITER_NATIVE, CheckObject, &walk, H5O_INFO_BASIC);
    walk.groups_only = 0; /* then everything */
    (void)H5Ovisit2(fid, H5_INDEX_NAME, H5_ITER_NATIVE, CheckObject, &walk, H5O_INFO_BASIC);
    H5Fclose(fid);
  }
  H5Pclose(fapl);
  if (verbose) {
    GuardStats stats;

    GuardGetStats(&stats);
    fprintf(stderr, "petnet-hdf5check: %s: %s, %ld objects visited; %ld allocations guarded, %ld unguarded, at most %ld guarded blocks alive\n", file, fid >= 0 ? "walked" : "not an HDF5 file HDF5 can open", walk.objects, stats.guarded,
            stats.unguarded, stats.peaklive);
  }
  /* never H5close(): Debian's HDF5 is the parallel build, and nothing here initialised MPI */
  (void)fflush(stderr);
  _exit(0);
}
