/* petnet-hdf5check's guard-page allocator (guardmalloc.c): what it did, for the program's -verbose line */
#pragma once

typedef struct {
  long guarded;   /* blocks that ended at a guard page */
  long unguarded; /* blocks that came from the C library's allocator (mappings or addresses ran short) */
  long peaklive;  /* most guarded blocks alive at once */
} GuardStats;

void GuardEnable(long); /* from now on, guard at most that many live blocks (-1: as many as the kernel allows) */
void GuardGetStats(GuardStats *);
