static const char help[] = "The BLAS and the CPU in view (issue 31): PetNetGetBLASInfo(), PetNetGetCPUFeatures(), PetNetGetBLASCoreAdvice().\n"
                           "  Checks that the strings are non-empty, that the core is one word, that the features agree with the\n"
                           "  compiler's __builtin_cpu_supports(), and that the advice is -expect_advice NAME (none: no advice; auto: what this\n"
                           "  test derives from __builtin_cpu_supports() and the core, so that it holds on any machine).\n"
                           "  -check_core NAME: the core must be NAME (a test that assumes it with -petnet_blas_core_assume).\n"
                           "  -view N: views a small Net N times (-net_view's BLAS line must appear once) and PetNetBLASView() once.\n"
                           "  -check_backend: NetGetBackendKernels() against the CPU's features: at single oneDNN runs the matmul on x86\n"
                           "  with AVX2; at bfloat16 it runs the matmul and the convolution where the CPU has AVX-512 BF16 or AMX-BF16 and\n"
                           "  neither without AVX-512 (oneDNN 2.6: the Net's bfloat16 results are then native's); native on the native backend.\n"
                           "  Ends with: summary: blas_core= advice= name_chars= features_chars= (the warning itself: tests/blas_warning.sh)\n";

#include <petnet.h>

/* feature is a word of the space-separated list */
static PetscErrorCode HasWord(const char list[], const char word[], PetscBool *has)
{
  size_t n, len;

  PetscFunctionBegin;
  PetscCall(PetscStrlen(word, &len));
  PetscCall(PetscStrlen(list, &n));
  *has = PETSC_FALSE;
  for (size_t i = 0; i + len <= n; i++) {
    PetscBool same;

    if (i > 0 && list[i - 1] != ' ') continue;
    if (i + len < n && list[i + len] != ' ') continue;
    PetscCall(PetscStrncmp(list + i, word, len, &same));
    if (same) *has = PETSC_TRUE;
  }
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  const char *name, *core, *features, *advice;
  char        expect[64] = "", checkcore[64] = "";
  size_t      lname, lcore, lfeat;
  PetscInt    views = 0;
  PetscBool   set, same, backend = PETSC_FALSE;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-check_backend", &backend, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-expect_advice", expect, sizeof(expect), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-check_core", checkcore, sizeof(checkcore), NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-view", &views, NULL));

  PetscCall(PetNetGetBLASInfo(&name, &core));
  PetscCall(PetNetGetCPUFeatures(&features));
  PetscCall(PetNetGetBLASCoreAdvice(&advice));
  PetscCall(PetscStrlen(name, &lname));
  PetscCall(PetscStrlen(core, &lcore));
  PetscCall(PetscStrlen(features, &lfeat));
  PetscCheck(lname > 0 && lcore > 0 && lfeat > 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "empty BLAS name (%zu chars), core (%zu) or CPU features (%zu)", lname, lcore, lfeat);
  PetscCheck(!strchr(core, ' '), PETSC_COMM_SELF, PETSC_ERR_PLIB, "the core \"%s\" is not one word: summary lines read blas_core=WORD", core);
  { /* the two queries agree with each other: PetNetGetBLASInfo() twice gives the same strings */
    const char *name2, *core2;

    PetscCall(PetNetGetBLASInfo(&name2, &core2));
    PetscCheck(name2 == name && core2 == core, PETSC_COMM_SELF, PETSC_ERR_PLIB, "PetNetGetBLASInfo() changed its strings between calls");
  }
#if defined(__x86_64__) || defined(__i386__)
  { /* each feature the compiler sees is in the list, and none it does not see */
    const struct {
      const char *word;
      int         has;
    } want[] = {
        {"avx", __builtin_cpu_supports("avx")}, {"avx2", __builtin_cpu_supports("avx2")}, {"fma", __builtin_cpu_supports("fma")}, {"avx512f", __builtin_cpu_supports("avx512f")}, {"avx512bw", __builtin_cpu_supports("avx512bw")},
    };

    for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(want); i++) {
      PetscBool has = PETSC_FALSE;

      PetscCall(HasWord(features, want[i].word, &has));
      PetscCheck(has == (want[i].has ? PETSC_TRUE : PETSC_FALSE), PETSC_COMM_SELF, PETSC_ERR_PLIB, "CPU features \"%s\": %s is %s, but __builtin_cpu_supports() says %d", features, want[i].word, has ? "listed" : "missing", want[i].has ? 1 : 0);
    }
  }
#endif
  if (checkcore[0]) {
    PetscCall(PetscStrcasecmp(core, checkcore, &same));
    PetscCheck(same, PETSC_COMM_SELF, PETSC_ERR_PLIB, "the BLAS core is %s, expected %s (-check_core)", core, checkcore);
  }
  PetscCall(PetscStrcmp(expect, "auto", &set));
  if (set) { /* the advice this test expects, from the compiler's view of the CPU and the core's kernels: the advice is
                the core of the CPU's best units when the core's kernels are below them */
    PetscBool   amx, lowcore = PETSC_TRUE;
    int         cpu = 0, lvl = 0;
    const char *best = "none", *avx2[] = {"haswell", "zen"}, *avx512[] = {"skylakex", "cooperlake", "sapphirerapids"};

    PetscCall(HasWord(features, "amx_bf16", &amx));
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) cpu = 1, best = "Haswell";
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) cpu = 2, best = amx ? "SapphireRapids" : "SkylakeX";
#endif
    if (cpu == 2 && !amx) {
      PetscBool bf16;

      PetscCall(HasWord(features, "avx512_bf16", &bf16));
      if (bf16) best = "Cooperlake";
    }
    for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(avx2); i++) {
      PetscCall(PetscStrcasecmp(core, avx2[i], &same));
      if (same) lvl = 1;
    }
    for (size_t i = 0; i < PETSC_STATIC_ARRAY_LENGTH(avx512); i++) {
      PetscCall(PetscStrcasecmp(core, avx512[i], &same));
      if (same) lvl = 2;
    }
    PetscCall(PetscStrcasecmp(core, "unknown", &same));
    if (same || lvl >= cpu) lowcore = PETSC_FALSE; /* another BLAS, or kernels at the CPU's level */
    PetscCall(PetscStrncpy(expect, lowcore ? best : "none", sizeof(expect)));
  }
  if (expect[0]) {
    PetscCall(PetscStrcmp(expect, "none", &set));
    if (set)
      PetscCheck(!advice, PETSC_COMM_SELF, PETSC_ERR_PLIB, "core %s on a CPU with %s: advice OPENBLAS_CORETYPE=%s, expected none", core, features, advice);
    else {
      PetscCheck(advice, PETSC_COMM_SELF, PETSC_ERR_PLIB, "core %s on a CPU with %s: no advice, expected OPENBLAS_CORETYPE=%s", core, features, expect);
      PetscCall(PetscStrcmp(expect, advice, &same));
      PetscCheck(same, PETSC_COMM_SELF, PETSC_ERR_PLIB, "core %s on a CPU with %s: advice OPENBLAS_CORETYPE=%s, expected %s", core, features, advice, expect);
    }
  }
  if (views > 0) { /* the BLAS line once per program, however many -net_view */
    Net         net;
    PetNetShape in = {1, {4}};

    PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
    PetscCall(NetSetLayers(net, "dense:3"));
    PetscCall(NetSetInputShape(net, &in));
    PetscCall(NetSetUp(net));
    for (PetscInt v = 0; v < views; v++) PetscCall(NetView(net, PETSC_VIEWER_STDOUT_WORLD));
    PetscCall(NetDestroy(&net));
    PetscCall(PetNetBLASView(NULL));
  }
  if (backend) { /* the kernels oneDNN runs, as the CPU's features say they must be */
    Net         net;
    PetNetShape in = {1, {4}};
    char        k[3][64];
    PetscBool   bf16 = PETSC_FALSE, amx = PETSC_FALSE, avx512 = PETSC_FALSE, avx2 = PETSC_FALSE;

    PetscCall(HasWord(features, "avx512_bf16", &bf16));
    PetscCall(HasWord(features, "amx_bf16", &amx));
    PetscCall(HasWord(features, "avx512f", &avx512));
    PetscCall(HasWord(features, "avx2", &avx2));
    PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
    PetscCall(NetSetLayers(net, "dense:3"));
    PetscCall(NetSetInputShape(net, &in));
    PetscCall(NetSetBackend(net, NET_BACKEND_ONEDNN));
    PetscCall(NetSetUp(net));
    PetscCall(NetSetPrecision(net, NET_PRECISION_SINGLE));
    PetscCall(NetGetBackendKernels(net, sizeof(k[0]), k[0], k[1], k[2]));
    PetscCheck(!avx2 || (strcmp(k[0], "native") && strcmp(k[1], "native")), PETSC_COMM_SELF, PETSC_ERR_PLIB, "single on a CPU with %s: matmul %s, convolution %s, expected oneDNN's kernels", features, k[0], k[1]);
    PetscCall(NetSetPrecision(net, NET_PRECISION_BFLOAT16));
    PetscCall(NetGetBackendKernels(net, sizeof(k[0]), k[0], k[1], k[2]));
    PetscCheck(!(bf16 || amx) || ((strstr(k[0], "bf16") || strstr(k[0], "amx")) && (strstr(k[1], "bf16") || strstr(k[1], "amx"))), PETSC_COMM_SELF, PETSC_ERR_PLIB,
               "bfloat16 on a CPU with %s: matmul %s, convolution %s, expected oneDNN's bfloat16 kernels", features, k[0], k[1]);
    PetscCheck(avx512 || (!strcmp(k[0], "native") && !strcmp(k[1], "native")), PETSC_COMM_SELF, PETSC_ERR_PLIB, "bfloat16 on a CPU with %s (no AVX-512): matmul %s, convolution %s, expected native (oneDNN 2.6 has no bfloat16 kernel there)", features,
               k[0], k[1]);
    PetscCall(NetSetBackend(net, NET_BACKEND_NATIVE));
    PetscCall(NetGetBackendKernels(net, sizeof(k[0]), k[0], k[1], k[2]));
    PetscCheck(!strcmp(k[0], "native") && !strcmp(k[1], "native") && !strcmp(k[2], "native"), PETSC_COMM_SELF, PETSC_ERR_PLIB, "backend native: matmul %s, convolution %s, pooling %s, expected native", k[0], k[1], k[2]);
    PetscCall(NetDestroy(&net));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "oneDNN's kernels (NetGetBackendKernels()) as the CPU's features say\n"));
  }
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "BLAS name: %s; CPU features: %s\n", name, features));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "summary: blas_core=%s advice=%s name_chars=%zu features_chars=%zu\n", core, advice ? advice : "none", lname, lfeat));
  PetscCall(PetscFinalize());
  return 0;
}
