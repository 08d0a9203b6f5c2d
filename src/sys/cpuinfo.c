/*
  The BLAS and the CPU in view: which BLAS PetNet's GEMMs run on, which kernels ("core") it picked, and which vector and
  matrix units the CPU has, so that a rate is never read without what it could be (issue 31).

  What is read, once per process, on the first query:
    BLAS name   OpenBLAS: the first two words of openblas_get_config() ("OpenBLAS 0.3.21"); another BLAS: the library
                that holds dgemm_ (its folder and file, e.g. "blas/libblas.so.3" for the reference BLAS, from dladdr())
    BLAS core   OpenBLAS: openblas_get_corename() ("Zen", "Haswell", "SkylakeX", "Prescott", ...); another BLAS: "unknown"
    CPU         x86: __builtin_cpu_supports() for avx, avx2, fma, avx512f, avx512bw, avx512_bf16, and cpuid leaf 7 with
                xgetbv for the AMX tiles (the CPU has them and the OS saves their state); another architecture says so
  OpenBLAS's functions are found with dlsym(RTLD_DEFAULT) as in threads.c: the library links against any BLAS.
  -petnet_blas_core_assume NAME (a testing aid, for OpenBLAS only) makes PetNet reason as if the core were NAME: the
  advice and the warning are tested on any machine without changing OPENBLAS_CORETYPE (the GEMMs run the real kernels).

  The kernels against the CPU, by level (0: SSE only, 1: AVX2 with FMA, 2: AVX-512 F and BW):
    core level  2: SkylakeX, Cooperlake, SapphireRapids; 1: Haswell, Zen; 0: every other core (Prescott, Core2,
                Nehalem, Sandybridge, Bulldozer's family, Katmai, ..., and the generic ones)
    CPU level   2: avx512f and avx512bw; 1: avx2 and fma; 0: otherwise
  A core below the CPU's level runs slower kernels than the CPU can (measured on issue 31's Xeon: dgemm 8.9 GFLOP/s
  on Prescott against 55 on SkylakeX). The advice is the OPENBLAS_CORETYPE of the CPU's level: SapphireRapids with
  AMX-BF16, Cooperlake with AVX512_BF16, SkylakeX with AVX-512, Haswell with AVX2. PetNet never sets the variable
  itself (it would change the user's kernels, and their last bits, without a word): it says so, once.
*/
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* dladdr() */
#endif
#include <petnetsys.h>
#include <petsc/private/petscimpl.h>
#include <dlfcn.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static PetscBool PetNetBLASRead = PETSC_FALSE;
static char      PetNetBLASName[256], PetNetBLASCore[64], PetNetCPUFeatures[256];
static int       PetNetCPULevel = 0, PetNetBLASLevel = -1; /* -1: a BLAS whose core is unknown */
static PetscBool PetNetCPUAMXBF16 = PETSC_FALSE, PetNetCPUAVX512BF16 = PETSC_FALSE;

/* The AMX tiles: cpuid leaf 7 EDX (bit 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8) and the OS saving the tile state
   (OSXSAVE, then XCR0 bits 17 XTILECFG and 18 XTILEDATA) */
static PetscErrorCode PetNetCPUAddAMX(void)
{
  PetscFunctionBegin;
#if defined(__x86_64__) || defined(__i386__)
  {
    unsigned int a, b, c, d, lo, hi;

    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24))) PetscFunctionReturn(0);
    {
      unsigned int a1, b1, c1, d1;

      if (!__get_cpuid(1, &a1, &b1, &c1, &d1) || !(c1 & (1u << 27))) PetscFunctionReturn(0); /* no OSXSAVE: no xgetbv */
    }
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if ((lo & (3u << 17)) != (3u << 17)) PetscFunctionReturn(0);
    PetscCall(PetscStrlcat(PetNetCPUFeatures, " amx_tile", sizeof(PetNetCPUFeatures)));
    if (d & (1u << 22)) {
      PetscCall(PetscStrlcat(PetNetCPUFeatures, " amx_bf16", sizeof(PetNetCPUFeatures)));
      PetNetCPUAMXBF16 = PETSC_TRUE;
    }
    if (d & (1u << 25)) PetscCall(PetscStrlcat(PetNetCPUFeatures, " amx_int8", sizeof(PetNetCPUFeatures)));
  }
#endif
  PetscFunctionReturn(0);
}

/* The CPU's features as one string of names separated by spaces, and its level */
static PetscErrorCode PetNetCPURead(void)
{
  PetscFunctionBegin;
  PetNetCPUFeatures[0] = 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  {
    const struct {
      const char *name;
      int         has;
    } feature[] = {
      {"avx", __builtin_cpu_supports("avx")},
      {"avx2", __builtin_cpu_supports("avx2")},
      {"fma", __builtin_cpu_supports("fma")},
      {"avx512f", __builtin_cpu_supports("avx512f")},
      {"avx512bw", __builtin_cpu_supports("avx512bw")},
#if defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__)
      {"avx512_bf16", __builtin_cpu_supports("avx512bf16")},
#endif
    };

    for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(feature); i++) {
      if (!feature[i].has) continue;
      if (PetNetCPUFeatures[0]) PetscCall(PetscStrlcat(PetNetCPUFeatures, " ", sizeof(PetNetCPUFeatures)));
      PetscCall(PetscStrlcat(PetNetCPUFeatures, feature[i].name, sizeof(PetNetCPUFeatures)));
    }
#if defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__)
    PetNetCPUAVX512BF16 = __builtin_cpu_supports("avx512bf16") ? PETSC_TRUE : PETSC_FALSE;
#endif
    PetscCall(PetNetCPUAddAMX());
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
      PetNetCPULevel = 2;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      PetNetCPULevel = 1;
    if (!PetNetCPUFeatures[0]) PetscCall(PetscStrncpy(PetNetCPUFeatures, "none (x86 without AVX)", sizeof(PetNetCPUFeatures)));
  }
#else
  PetscCall(PetscStrncpy(PetNetCPUFeatures, "unknown (not an x86 CPU: no cpuid)", sizeof(PetNetCPUFeatures)));
#endif
  PetscFunctionReturn(0);
}

/* The level of an OpenBLAS core name (see the top of the file) */
static PetscErrorCode PetNetBLASCoreLevel(const char core[], int *level)
{
  const char *avx512[] = {"skylakex", "cooperlake", "sapphirerapids"}, *avx2[] = {"haswell", "zen"};
  PetscBool   match;

  PetscFunctionBegin;
  *level = 0;
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(avx2); i++) {
    PetscCall(PetscStrcasecmp(core, avx2[i], &match));
    if (match) *level = 1;
  }
  for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(avx512); i++) {
    PetscCall(PetscStrcasecmp(core, avx512[i], &match));
    if (match) *level = 2;
  }
  PetscFunctionReturn(0);
}

/* The BLAS's name and core: OpenBLAS's own functions, or the library that holds dgemm_ */
static PetscErrorCode PetNetBLASReadInfo(void)
{
  char *(*config)(void)   = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_config");
  char *(*corename)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");

  PetscFunctionBegin;
  if (PetNetBLASRead) PetscFunctionReturn(0);
  PetscCall(PetNetCPURead());
  if (config && corename) {
    const char *text = config(), *core = corename();
    size_t      n     = 0;
    int         words = 0;

    /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": the first two words */
    while (text && text[n] && n < sizeof(PetNetBLASName) - 1) {
      if (text[n] == ' ' && ++words == 2) break;
      n++;
    }
    PetscCall(PetscStrncpy(PetNetBLASName, n ? text : "OpenBLAS", n ? n + 1 : sizeof(PetNetBLASName)));
    PetscCall(PetscStrncpy(PetNetBLASCore, core && core[0] ? core : "unknown", sizeof(PetNetBLASCore)));
    { /* a testing aid: reason as if OpenBLAS ran another core (the GEMMs still run the real one); tests check the
         advice and the warning this way, without touching OPENBLAS_CORETYPE */
      char      assume[64];
      PetscBool set = PETSC_FALSE;

      PetscCall(PetscOptionsGetString(NULL, NULL, "-petnet_blas_core_assume", assume, sizeof(assume), &set));
      if (set && assume[0]) PetscCall(PetscStrncpy(PetNetBLASCore, assume, sizeof(PetNetBLASCore)));
    }
    PetNetBLASLevel = -1;
    {
      PetscBool unknown;

      PetscCall(PetscStrcmp(PetNetBLASCore, "unknown", &unknown));
      if (!unknown) PetscCall(PetNetBLASCoreLevel(PetNetBLASCore, &PetNetBLASLevel));
    }
  } else {
    void   *gemm = dlsym(RTLD_DEFAULT, "dgemm_");
    Dl_info where;

    PetscCall(PetscStrncpy(PetNetBLASName, "unknown", sizeof(PetNetBLASName)));
    if (gemm && dladdr(gemm, &where) && where.dli_fname) { /* ".../blas/libblas.so.3": the folder names the BLAS */
      const char *file = where.dli_fname, *last = NULL, *before = NULL;

      for (const char *p = file; *p; p++)
        if (*p == '/') before = last, last = p;
      PetscCall(PetscStrncpy(PetNetBLASName, before ? before + 1 : (last ? last + 1 : file), sizeof(PetNetBLASName)));
    }
    PetscCall(PetscStrncpy(PetNetBLASCore, "unknown", sizeof(PetNetBLASCore)));
    PetNetBLASLevel = -1;
  }
  PetNetBLASRead = PETSC_TRUE;
  PetscFunctionReturn(0);
}

/*@C
  PetNetGetBLASInfo - gets the name of the BLAS that PetNet's GEMMs call and the kernels ("core") it runs on this CPU

  Not collective

  Output Parameters:
+ name - "OpenBLAS 0.3.21" (the start of openblas_get_config()), or for another BLAS the library that holds dgemm_
         (its folder and file, e.g. "blas/libblas.so.3"), or "unknown"; pass NULL if not wanted
- core - OpenBLAS's openblas_get_corename() ("Zen", "Haswell", "SkylakeX", "Prescott", ...), or "unknown" for another
         BLAS; one word, as in the summary lines' blas_core=; pass NULL if not wanted

  Notes:
  The strings are PetNet's and live as long as the program; read once, on the first call. OpenBLAS picks its core
  from the CPU when it is loaded, unless the environment variable OPENBLAS_CORETYPE names one; PetNet never sets it.
  PetNetGetBLASCoreAdvice() says whether a faster core exists for this CPU.

  Options Database Key:
. -petnet_blas_core_assume <core> - a testing aid: PetNet reports and reasons as if OpenBLAS ran this core (the advice,
                                    the warning, blas_core=), while the GEMMs run the real one

  Level: intermediate

.seealso: `PetNetGetCPUFeatures()`, `PetNetGetBLASCoreAdvice()`, `PetNetBLASView()`
@*/
PetscErrorCode PetNetGetBLASInfo(const char **name, const char **core)
{
  PetscFunctionBegin;
  PetscCall(PetNetBLASReadInfo());
  if (name) *name = PetNetBLASName;
  if (core) *core = PetNetBLASCore;
  PetscFunctionReturn(0);
}

/*@C
  PetNetGetCPUFeatures - gets the vector and matrix units of this CPU that matter to GEMMs, as one string

  Not collective

  Output Parameter:
. features - the names, separated by spaces, of those present among avx, avx2, fma, avx512f, avx512bw, avx512_bf16
             (when the compiler knows it: GCC 12 and later), amx_tile, amx_bf16, amx_int8 (the tiles only when the
             operating system saves their state); "none (x86 without AVX)", or "unknown (not an x86 CPU: no cpuid)"

  Notes:
  The string is PetNet's and lives as long as the program. x86 features come from the compiler's
  __builtin_cpu_supports(), the AMX ones from cpuid leaf 7 and xgetbv.

  Level: intermediate

.seealso: `PetNetGetBLASInfo()`, `PetNetGetBLASCoreAdvice()`, `PetNetBLASView()`
@*/
PetscErrorCode PetNetGetCPUFeatures(const char **features)
{
  PetscFunctionBegin;
  PetscValidPointer(features, 1);
  PetscCall(PetNetBLASReadInfo());
  *features = PetNetCPUFeatures;
  PetscFunctionReturn(0);
}

/*@C
  PetNetGetBLASCoreAdvice - gets the OPENBLAS_CORETYPE that would run faster kernels on this CPU than the BLAS's
  current core, or NULL when the core matches the CPU

  Not collective

  Output Parameter:
. coretype - SapphireRapids (a CPU with AMX-BF16), Cooperlake (AVX512_BF16), SkylakeX (AVX-512) or Haswell (AVX2 and
             FMA) when OpenBLAS runs kernels of a lower level (e.g. Prescott, its generic SSE kernels, on an AVX2 CPU);
             NULL when the core is of the CPU's level, or the BLAS is not OpenBLAS (its core is unknown)

  Notes:
  The levels: AVX-512 for SkylakeX, Cooperlake, SapphireRapids; AVX2 for Haswell, Zen; below for every other core.
  A core of the CPU's level is not second-guessed (Zen on an AMD CPU with AVX2, SkylakeX on a CPU with AMX).
  PetNetInitialize() prints this advice once per job when it is not NULL (PetNetBLASCheck()).

  Level: intermediate

.seealso: `PetNetGetBLASInfo()`, `PetNetGetCPUFeatures()`, `PetNetBLASCheck()`
@*/
PetscErrorCode PetNetGetBLASCoreAdvice(const char **coretype)
{
  PetscFunctionBegin;
  PetscValidPointer(coretype, 1);
  PetscCall(PetNetBLASReadInfo());
  *coretype = NULL;
  if (PetNetBLASLevel < 0 || PetNetBLASLevel >= PetNetCPULevel) PetscFunctionReturn(0);
  if (PetNetCPULevel == 2)
    *coretype = PetNetCPUAMXBF16 ? "SapphireRapids" : (PetNetCPUAVX512BF16 ? "Cooperlake" : "SkylakeX");
  else
    *coretype = "Haswell";
  PetscFunctionReturn(0);
}

/*@C
  PetNetBLASView - prints one line: the BLAS, its core and threads, and the CPU's features

  Collective on the viewer

  Input Parameter:
. viewer - an ASCII viewer, or NULL for standard output on `PETSC_COMM_WORLD`

  Notes:
  The line reads "BLAS: OpenBLAS 0.3.21 core Zen (threads 1); CPU: avx avx2 fma". The threads are the BLAS's own
  (openblas_get_num_threads(); PetNet's threads each call it with one thread, see PetNetSetNumThreads()), "?" for
  another BLAS. The first ASCII -net_view of a program starts with this line, -log_view prints it above its table
  (PetNetBLASCheck()) and bin/bench_dgemm as its first line. The line starts with "BLAS: ", which tests/numdiff skips:
  expected outputs stay the same on every machine.

  Level: intermediate

.seealso: `PetNetGetBLASInfo()`, `PetNetGetCPUFeatures()`, `PetNetBLASCheck()`
@*/
PetscErrorCode PetNetBLASView(PetscViewer viewer)
{
  int (*threads)(void)         = (int (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  char            nthreads[16] = "?";
  PetscBool       isascii;
  PetscViewerType type;

  PetscFunctionBegin;
  if (!viewer) PetscCall(PetscViewerASCIIGetStdout(PETSC_COMM_WORLD, &viewer));
  PetscValidHeaderSpecific(viewer, PETSC_VIEWER_CLASSID, 1);
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &isascii));
  PetscCall(PetscViewerGetType(viewer, &type));
  PetscCheck(isascii, PetscObjectComm((PetscObject)viewer), PETSC_ERR_SUP, "PetNetBLASView() prints one line of text: give it an ASCII viewer, not a %s viewer", type);
  PetscCall(PetNetBLASReadInfo());
  if (threads) PetscCall(PetscSNPrintf(nthreads, sizeof(nthreads), "%d", threads()));
  PetscCall(PetscViewerASCIIPrintf(viewer, "BLAS: %s core %s (threads %s); CPU: %s\n", PetNetBLASName, PetNetBLASCore, nthreads, PetNetCPUFeatures));
  PetscFunctionReturn(0);
}

/* -log_view's line: PetscFinalize() destroys the objects of PetscObjectRegisterDestroy() just before it prints the
   log (PETSc 3.18), so a container's destructor prints the BLAS line right above "PETSc Performance Summary" */
static PetscErrorCode PetNetBLASLogViewLine(void *ctx)
{
  PetscFunctionBegin;
  (void)ctx;
  PetscCall(PetNetBLASView(NULL));
  PetscFunctionReturn(0);
}

/*@C
  PetNetBLASCheck - warns once per job, on the first rank's standard error, when the BLAS runs slower kernels than
  the CPU can, naming the environment variable that fixes it; with -log_view, arranges the BLAS line above the log

  Collective on comm

  Input Parameter:
. comm - the communicator whose first rank prints (PetNetInitialize() passes `PETSC_COMM_WORLD`)

  Options Database Keys:
+ -petnet_blas_warning <bool> - print the warning (default true); 0 silences it
- -log_view                   - PetscFinalize() prints PetNetBLASView()'s line just above the log (when the log goes to
                                standard output)

  Notes:
  Called by PetNetInitialize(); a program that starts with PetscInitialize() may call it itself. The warning is one
  line, e.g. "PetNet warning: OpenBLAS 0.3.21 runs its Prescott kernels on a CPU with avx avx2 fma: ...
  OPENBLAS_CORETYPE=Haswell ...", given once per process whatever the number of calls. PetNet never sets
  OPENBLAS_CORETYPE itself: the kernels, and the last bits of the results, stay the user's choice.
  PetNetGetBLASCoreAdvice() gives the advice to a program.

  Level: developer

.seealso: `PetNetGetBLASCoreAdvice()`, `PetNetBLASView()`, `PetNetInitialize()`
@*/
PetscErrorCode PetNetBLASCheck(MPI_Comm comm)
{
  static PetscBool warned = PETSC_FALSE, logline = PETSC_FALSE;
  const char      *advice;
  PetscBool        warn = PETSC_TRUE, logview = PETSC_FALSE;
  char             logtext[PETSC_MAX_PATH_LEN] = "";

  PetscFunctionBegin;
  PetscOptionsBegin(comm, NULL, "PetNet: the BLAS's kernels against the CPU", "PetNetBLASCheck");
  PetscCall(PetscOptionsBool("-petnet_blas_warning", "Warn when the BLAS runs slower kernels than the CPU can (with the OPENBLAS_CORETYPE that fixes it)", "PetNetBLASCheck", warn, &warn, NULL));
  PetscOptionsEnd();
  PetscCall(PetNetGetBLASCoreAdvice(&advice));
  if (warn && advice && !warned) {
    const char *env = getenv("OPENBLAS_CORETYPE");

    PetscCall(PetscFPrintf(comm, PETSC_STDERR,
                           "PetNet warning: %s runs its %s kernels on a CPU with %s%s%s%s: its GEMMs (dense layers, convolutions) run several times slower than they could; set OPENBLAS_CORETYPE=%s in the environment (mpiexec -x "
                           "OPENBLAS_CORETYPE=%s), or -petnet_blas_warning 0 to silence this\n",
                           PetNetBLASName, PetNetBLASCore, PetNetCPUFeatures, env ? " (OPENBLAS_CORETYPE=" : "", env ? env : "", env ? " is set)" : "", advice, advice));
    warned = PETSC_TRUE;
  }
  PetscCall(PetscOptionsGetString(NULL, NULL, "-log_view", logtext, sizeof(logtext), &logview));
  if (logview && !logline && !strchr(logtext, ':')) { /* -log_view or -log_view ascii: standard output */
    PetscContainer line;

    PetscCall(PetscContainerCreate(PETSC_COMM_WORLD, &line));
    PetscCall(PetscContainerSetUserDestroy(line, PetNetBLASLogViewLine));
    PetscCall(PetscObjectRegisterDestroy((PetscObject)line));
    logline = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}
