/*
  A guard-page allocator for petnet-hdf5check (petnet-hdf5check.c), the program that walks an HDF5 file's object headers
  for PetNetCheckHDF5File(). Linked into that executable only (never into libpetnet): the malloc family defined in an
  executable overrides the C library's for every shared library the process loads, libhdf5 included, so every buffer
  HDF5 decodes a header from ends where 64 KB of inaccessible pages begin. A read past the end of any block faults at
  once, in the checking process, whatever lies beyond it (a read that starts more than 64 KB past the end may land in
  another block); PetNet then refuses the file instead of crashing later in the reader.

  Layout of a guarded block (one virtual region reserved at the first call, PROT_NONE, carved from the bottom up):

      | header page(s) ...  hdr | user bytes (n, rounded up to the alignment) | guard: 16 pages PROT_NONE | next block
                                ^ p = guard - round(n), aligned: 16 bytes for n >= 16 (less for smaller n,
                                  which no object of a larger alignment fits into), or the caller's alignment

  The 16 bytes before p (hdr) hold the block's start and page count. A block of n bytes, n not a multiple of 16, ends
  16 - n % 16 bytes before its guard (malloc's 16-byte alignment): a read that stops in those bytes does not fault.
  Guarding starts when the program calls GuardEnable(), after the HDF5 library's own start-up (which reads no file:
  some 3000 allocations fewer); until then blocks come from the C library's allocator.

  free() of a block of more than 4 pages (16 KB) makes it PROT_NONE and gives its pages back (its addresses are never
  reused: a use after free faults). A smaller block is kept, accessible, for the next allocation of as many pages,
  whose end is placed at the guard again: over-reads are still caught, a use after free of a small block is not.
  Protecting every freed block made the walk of a model file 4 times slower (56 ms against 13 ms for 5,400
  allocations: each costs two changes of the process's mappings, which dominate).

  Fallback: every live block costs the kernel about two memory mappings (vm.max_map_count, 65530 by default) and at
  least one page. When a block cannot be guarded (the mapping count is near its limit, mprotect() refuses, or the
  reserved region is used up) the allocation comes from the C library's own allocator (__libc_malloc, ...), unguarded:
  a large valid file is checked less strictly, never refused for want of mappings. free() tells the two apart by
  address (inside the region: guarded).
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guardmalloc.h"

/* glibc's allocator under its internal names (exported since 2.2.5): the fallback */
extern void *__libc_malloc(size_t);
extern void  __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

typedef struct {
  char  *block; /* the first page of the block's accessible pages */
  size_t pages; /* how many (the guard page after them is not counted) */
} GuardHeader;

#define GUARD_PAGES 16   /* inaccessible pages after each block: a read that starts up to 64 KB past its end faults */
#define GUARD_REUSE 4    /* freed blocks of up to this many pages are kept for reuse (larger ones are given back) */
#define GUARD_READY 4096 /* freed blocks kept for each page count */

static struct {
  char         *base, *end, *next; /* the reserved region and its unused part */
  size_t        page;
  long          live, maxlive;        /* guarded blocks alive, and how many may be (from vm.max_map_count) */
  int           initialized, enabled; /* enabled: GuardEnable() was called */
  volatile char lock;
  GuardStats    stats;
  char         *ready[GUARD_REUSE + 1][GUARD_READY]; /* freed blocks kept for reuse, by page count (accessible) */
  long          nready[GUARD_REUSE + 1];
} guard;

static void GuardLock(void)
{
  while (__atomic_test_and_set(&guard.lock, __ATOMIC_ACQUIRE)) {}
}

static void GuardUnlock(void)
{
  __atomic_clear(&guard.lock, __ATOMIC_RELEASE);
}

/* the kernel's limit on mappings, read without stdio (which would allocate) */
static long GuardMaxMapCount(void)
{
  char buf[32];
  long n  = 0;
  int  fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);

  if (fd < 0) return 65530;
  ssize_t len = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  for (ssize_t i = 0; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) n = 10 * n + (buf[i] - '0');
  return n > 0 ? n : 65530;
}

/* called with the lock held: reserve the region (1 TB of addresses, no memory; less if the address space is limited) */
static void GuardInitialize(void)
{
  guard.initialized = 1;
  guard.page        = (size_t)sysconf(_SC_PAGESIZE);
  /* each live block splits the region into two more mappings; keep 4096 for the libraries' own (files, stacks) */
  guard.maxlive = (GuardMaxMapCount() - 4096) / 2;
  for (size_t size = (size_t)1 << 40; size >= ((size_t)256 << 20); size /= 2) {
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    if (p != MAP_FAILED) {
      guard.base = guard.next = (char *)p;
      guard.end               = guard.base + size;
      return;
    }
  }
}

static int GuardOwns(const void *p)
{
  return guard.base && (const char *)p > guard.base && (const char *)p <= guard.end;
}

/* a guarded block of n bytes aligned to align (a power of two), or NULL when none can be made */
static void *GuardAllocate(size_t n, size_t align)
{
  size_t       need, pages;
  char        *block, *guardpage, *p;
  GuardHeader *hdr;
  int          reused;

  if (n > ((size_t)1 << 46) || align > ((size_t)1 << 30)) return NULL;
  GuardLock();
  if (!guard.initialized) GuardInitialize();
  need  = n + align + sizeof(GuardHeader);
  pages = (need + guard.page - 1) / guard.page;
  if (!guard.enabled) {
    GuardUnlock();
    return NULL;
  }
  if (!guard.base || guard.live >= guard.maxlive || (size_t)(guard.end - guard.next) < (pages + GUARD_PAGES) * guard.page) {
    guard.stats.unguarded++;
    GuardUnlock();
    return NULL;
  }
  reused = pages <= GUARD_REUSE && guard.nready[pages];
  block  = reused ? guard.ready[pages][guard.nready[pages] - 1] : guard.next;
  if (!reused && mprotect(block, pages * guard.page, PROT_READ | PROT_WRITE)) { /* ENOMEM: too many mappings */
    guard.stats.unguarded++;
    GuardUnlock();
    return NULL;
  }
  if (reused)
    guard.nready[pages]--;
  else
    guard.next += (pages + GUARD_PAGES) * guard.page; /* the pages after the block stay PROT_NONE: the guard */
  guard.live++;
  guard.stats.guarded++;
  if (guard.live > guard.stats.peaklive) guard.stats.peaklive = guard.live;
  GuardUnlock();
  guardpage  = block + pages * guard.page;
  p          = (char *)((uintptr_t)(guardpage - n) & ~(uintptr_t)(align - 1));
  hdr        = (GuardHeader *)(p - sizeof(GuardHeader));
  hdr->block = block;
  hdr->pages = pages;
  if (reused) memset(p, 0, (size_t)(guardpage - p)); /* zero, as fresh pages are (calloc) */
  return p;
}

/* the alignment malloc(n) owes: 16, or the largest power of two not above n (no object of a larger one fits) */
static size_t GuardAlignment(size_t n)
{
  size_t a = 16;

  while (a > 1 && a > n) a /= 2;
  return a;
}

/* a small block is kept for the next allocation of the same page count (its end moves to its guard again); a larger
   one is made inaccessible and its pages given back (one call; it merges with its neighbours) */
static void GuardRelease(void *p)
{
  GuardHeader *hdr   = (GuardHeader *)((char *)p - sizeof(GuardHeader));
  char        *block = hdr->block;
  size_t       pages = hdr->pages;

  GuardLock();
  guard.live--;
  if (pages <= GUARD_REUSE && guard.nready[pages] < GUARD_READY) {
    guard.ready[pages][guard.nready[pages]++] = block;
    block                                     = NULL;
  }
  GuardUnlock();
  if (block) (void)mmap(block, pages * guard.page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

/* bytes from p to its guard page */
static size_t GuardUsable(const void *p)
{
  const GuardHeader *hdr = (const GuardHeader *)((const char *)p - sizeof(GuardHeader));

  return (size_t)(hdr->block + hdr->pages * guard.page - (const char *)p);
}

void *malloc(size_t n)
{
  void *p = GuardAllocate(n, GuardAlignment(n));

  return p ? p : __libc_malloc(n);
}

void free(void *p)
{
  if (!p) return;
  if (GuardOwns(p))
    GuardRelease(p);
  else
    __libc_free(p);
}

void *calloc(size_t n, size_t size)
{
  void *p;

  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  p = GuardAllocate(n * size, GuardAlignment(n * size));
  return p ? p : __libc_calloc(n, size);
}

void *realloc(void *old, size_t n)
{
  void  *p;
  size_t keep;

  if (!old) return malloc(n);
  if (!GuardOwns(old)) return __libc_realloc(old, n);
  if (!n) {
    free(old);
    return NULL;
  }
  if (!(p = malloc(n))) return NULL;
  keep = GuardUsable(old);
  memcpy(p, old, keep < n ? keep : n);
  GuardRelease(old);
  return p;
}

void *reallocarray(void *old, size_t n, size_t size)
{
  if (size && n > SIZE_MAX / size) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(old, n * size);
}

void *memalign(size_t align, size_t n)
{
  void *p;

  if (!align || (align & (align - 1))) {
    errno = EINVAL;
    return NULL;
  }
  p = GuardAllocate(n, align > GuardAlignment(n) ? align : GuardAlignment(n));
  return p ? p : __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
  void *p;

  if (!align || (align & (align - 1)) || align % sizeof(void *)) return EINVAL;
  if (!(p = memalign(align, n))) return ENOMEM;
  *out = p;
  return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
  return memalign(align, n);
}

void *valloc(size_t n)
{
  return memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
  size_t page = (size_t)sysconf(_SC_PAGESIZE);

  return memalign(page, (n + page - 1) / page * page);
}

size_t malloc_usable_size(void *p)
{
  static size_t (*libc_usable)(void *);

  if (!p) return 0;
  if (GuardOwns(p)) return GuardUsable(p);
  if (!libc_usable) libc_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
  return libc_usable ? libc_usable(p) : 0;
}

void GuardEnable(long maxlive)
{
  GuardLock();
  if (!guard.initialized) GuardInitialize();
  if (maxlive >= 0 && maxlive < guard.maxlive) guard.maxlive = maxlive;
  guard.enabled = 1;
  GuardUnlock();
}

void GuardGetStats(GuardStats *stats)
{
  GuardLock();
  *stats = guard.stats;
  GuardUnlock();
}
