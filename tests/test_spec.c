static const char help[] = "Hostile layer lists and graphs (test graph_hostile): each must be refused with a PETSc error, never crash, hang,\n"
                           "allocate without bound or be cut silently. Builds every spec on a 4x4x2 input (NetSetLayers() or NetSetGraph(),\n"
                           "then NetSetUp()) and prints one line per spec: its name and the first line of its error message.\n"
                           "Exits with an error if a spec is accepted. Options: -spec_view (the whole messages and the times),\n"
                           "-spec_case NAME (only that spec), -spec_long (only the 1 MB specs long_*, which build 10,000 nodes before they\n"
                           "are refused: minutes under -malloc_debug, so test graph_hostile_long runs them without).\n";

#include <petnet.h>

typedef struct {
  const char *name;
  const char *spec; /* NULL: built by MakeSpec() */
} HostileSpec;

static const HostileSpec cases[] = {
    {"dense_huge", "dense:99999999999999"},
    {"dense_negative", "dense:-1"},
    {"dense_zero", "dense:0"},
    {"dense_int_overflow", "dense:2147483648"},
    {"dense_params_overflow", "dense:2000000000"},
    {"dense_garbage", "dense:12abc"},
    {"conv_stride0", "conv2d:4:3:0:1"},
    {"conv_kernel0", "conv2d:4:0"},
    {"conv_padding_neg", "conv2d:4:3:1:-1"},
    {"conv_padding_huge", "conv2d:4:3:1:2000000000"},
    {"conv_kernel_huge", "conv2d:4:99999999999:1"},
    {"conv_groups0", "conv2d:4:3:1:1:groups=0"},
    {"conv_channels_huge", "conv2d:3000000000"},
    {"conv_dilation0", "conv2d:4:3:1:1:dilation=0"},
    {"maxpool_kernel0", "maxpool:0"},
    {"maxpool_stride_neg", "maxpool:2:-2"},
    {"avgpool_huge", "avgpool:99999999999"},
    {"unknown_kind", "dense:4,frobnicate,dense:2"},
    {"empty_entry", "dense:4,,dense:2"},
    {"unbalanced_open", "residual(dense:4"},
    {"unbalanced_close", "dense:4)"},
    {"unbalanced_quote", "dense:\"4,relu"},
    {"residual_empty", "residual()"},
    {"residual_bars", "residual(dense:4|dense:4|dense:4)"},
    {"graph_no_layer", "a = dense:4; b =;"},
    {"graph_no_name", "= dense:4;"},
    {"graph_arrow_in_parens", "a = residual(dense:4 <- input);"},
    {"graph_unknown_input", "a = dense:4 <- nowhere;"},
    {"nested_10000", NULL},
    {"graph_nested_10000", NULL},
    {"long_list_1MB", NULL},
    {"long_graph_1MB", NULL},
    {"long_args", NULL},
};

/* the specs too long to write out: deep nesting and 1 MB texts */
static PetscErrorCode MakeSpec(const char name[], char **spec)
{
  PetscBool match;
  size_t    n = 0, cap = 1 << 21;
  char     *s;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(cap, &s));
  s[0] = 0;
  PetscCall(PetscStrcmp(name, "nested_10000", &match));
  if (match || !strcmp(name, "graph_nested_10000")) {
    if (!match) n += sprintf(s + n, "a = ");
    for (int i = 0; i < 10000; i++) n += sprintf(s + n, "residual(");
    n += sprintf(s + n, "dense:2");
    for (int i = 0; i < 10000; i++) n += sprintf(s + n, ")");
    if (!match) n += sprintf(s + n, ";");
  } else if (!strcmp(name, "long_list_1MB")) { /* 200,000 valid entries, then one bad one at the end */
    while (n < (1 << 20)) n += sprintf(s + n, "relu,");
    n += sprintf(s + n, "dense:0");
  } else if (!strcmp(name, "long_graph_1MB")) { /* 100,000 distinct names, the last one taken */
    for (int i = 0; n < (1 << 20); i++) n += sprintf(s + n, "n%d = relu; ", i);
    n += sprintf(s + n, "n0 = relu;");
  } else if (!strcmp(name, "long_args")) { /* arguments longer than any buffer: the bad field comes last */
    n += sprintf(s + n, "conv2d:4");
    while (n < 4000) n += sprintf(s + n, ":groups=1");
    n += sprintf(s + n, ":groups=0");
  }
  *spec = s;
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetNetShape in   = {3, {4, 4, 2}};
  PetscBool   view = PETSC_FALSE, longs = PETSC_FALSE;
  PetscInt    accepted = 0;
  char        only[64] = "";

  PetscCall(PetscInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-spec_view", &view, NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-spec_case", only, sizeof(only), NULL));
  PetscCall(PetscOptionsGetBool(NULL, NULL, "-spec_long", &longs, NULL));
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    Net            net;
    char          *spec = NULL, *msg = NULL, line[160];
    const char    *text;
    PetscErrorCode ierr;
    PetscLogDouble t0, t1;

    if (only[0] && strcmp(only, cases[c].name)) continue;
    if (!only[0] && longs != (PetscBool)!strncmp(cases[c].name, "long_", 5)) continue;
    if (!cases[c].spec)
      PetscCall(MakeSpec(cases[c].name, &spec));
    else
      PetscCall(PetscStrallocpy(cases[c].spec, &spec));
    PetscCall(NetCreate(PETSC_COMM_WORLD, &net));
    PetscCall(PetscTime(&t0));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = strchr(spec, ';') ? NetSetGraph(net, spec) : NetSetLayers(net, spec);
    if (!ierr) ierr = NetSetInputShape(net, &in);
    if (!ierr) ierr = NetSetUp(net);
    PetscCall(PetscPopErrorHandler());
    PetscCall(PetscTime(&t1));
    if (ierr) PetscCall(PetscErrorMessage(ierr, &text, &msg));
    PetscCall(PetscStrncpy(line, msg ? msg : "", sizeof(line)));
    line[strcspn(line, "\n")] = 0;
    if (!ierr) accepted++;
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%-24s %s%s\n", cases[c].name, ierr ? "refused: " : "ACCEPTED", line));
    if (view && msg) PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  %s (%.2f s)\n", msg, (double)(t1 - t0)));
    PetscCall(NetDestroy(&net));
    PetscCall(PetscFree(spec));
  }
  PetscCheck(!accepted, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%" PetscInt_FMT " hostile specs were accepted", accepted);
  PetscCall(PetscFinalize());
  return 0;
}
