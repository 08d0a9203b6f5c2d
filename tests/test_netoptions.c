static const char help[] = "Net options and views. The Net is built from the command line (NetSetFromOptions); -check selects what to verify:\n"
                           "  -check view       nothing more: -net_view prints the table (compared with an expected output)\n"
                           "  -check jacobian   one forward pass on -nlocal random samples (with -net_test_jacobian it prints the checks);\n"
                           "                    -zero_rows R: the first R rows of each (h, w, c) sample zero, as an image's background\n"
                           "                    -ids V: the samples integer token ids in [0, V) (a Net starting with an embedding)\n"
                           "  -check layers     the parsed layer list against -expect_kinds k1,k2,.. -expect_params P -expect_output S,\n"
                           "                    and NetGetSpec() round trip (of a list or a graph)\n"
                           "  -check prefixed   layer 0 (dense) initialised as -expect_init KIND [-expect_std S]; layer 1 (leakyrelu)\n"
                           "                    has slope -expect_slope A (checked on known negative inputs)\n"
                           "  -check init       every initialisation kind on a 784-256-128-10 MLP: statistics, biases zero, and the same\n"
                           "                    parameters on PETSC_COMM_WORLD as on PETSC_COMM_SELF\n"
                           "  -prefix P         options prefix of the Net (then -Pnet_layers, -Player0_..., ...)\n"
                           "  -late LAYERS -late_shape S   build and set up the Net through the API, then read the options\n";

#include <petnet.h>

/* With -late LAYERS -late_shape SHAPE the Net is built and set up through the API first, and the options are read
   afterwards (a layer option that changes a shape must then lay the Net out anew). */
static PetscErrorCode CreateNetFromOptions(MPI_Comm comm, const char prefix[], Net *net)
{
  char      layers[1024], shape[64] = "";
  PetscBool late;

  PetscFunctionBegin;
  PetscCall(NetCreate(comm, net));
  if (prefix[0]) PetscCall(PetscObjectSetOptionsPrefix((PetscObject)*net, prefix));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-late", layers, sizeof(layers), &late));
  if (late) {
    PetNetShape in;

    PetscCall(PetscOptionsGetString(NULL, NULL, "-late_shape", shape, sizeof(shape), NULL));
    PetscCall(PetNetShapeFromString(shape, &in));
    PetscCall(NetSetLayers(*net, layers));
    PetscCall(NetSetInputShape(*net, &in));
    PetscCall(NetSetUp(*net));
  }
  PetscCall(NetSetFromOptions(*net));
  PetscCall(NetSetUp(*net));
  PetscFunctionReturn(0);
}

/* The whole parameter vector on every rank (caller frees) */
static PetscErrorCode GatherParameters(Net net, Vec *all)
{
  Vec        theta;
  VecScatter toall;

  PetscFunctionBegin;
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecScatterCreateToAll(theta, &toall, all));
  PetscCall(VecScatterBegin(toall, theta, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterEnd(toall, theta, *all, INSERT_VALUES, SCATTER_FORWARD));
  PetscCall(VecScatterDestroy(&toall));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckJacobian(Net net)
{
  PetscInt    nlocal = 2, zerorows = 0, ids = 0;
  Vec         X;
  PetscRandom rnd;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-nlocal", &nlocal, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-zero_rows", &zerorows, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-ids", &ids, NULL));
  PetscCall(NetCreateVecs(net, nlocal, &X, NULL));
  PetscCall(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
  PetscCall(PetscRandomSetInterval(rnd, -1.0, 1.0));
  PetscCall(PetscRandomSetSeed(rnd, 3));
  PetscCall(PetscRandomSeed(rnd));
  PetscCall(VecSetRandom(X, rnd));
  if (ids > 0) { /* integer token ids in [0, ids) for a Net that starts with an embedding */
    PetscScalar *x;
    PetscInt     n;

    PetscCall(VecGetLocalSize(X, &n));
    PetscCall(VecGetArray(X, &x));
    for (PetscInt i = 0; i < n; i++) x[i] = PetscMin(ids - 1, PetscFloorReal((PetscRealPart(x[i]) + 1) * 0.5 * ids));
    PetscCall(VecRestoreArray(X, &x));
  }
  if (zerorows) { /* rows [0, zerorows) of every sample (h, w, c) are zero: max pools over them see ties */
    PetNetShape  in;
    PetscScalar *x;
    PetscInt     n, F;

    PetscCall(NetGetInputShape(net, &in));
    PetscCall(PetNetShapeSize(&in, &F));
    PetscCall(VecGetLocalSize(X, &n));
    PetscCall(VecGetArray(X, &x));
    for (PetscInt i = 0; i < n; i++)
      if (i % F < zerorows * (F / in.dim[0])) x[i] = 0;
    PetscCall(VecRestoreArray(X, &x));
  }
  PetscCall(NetForward(net, X, NULL));
  PetscCall(PetscRandomDestroy(&rnd));
  PetscCall(VecDestroy(&X));
  PetscFunctionReturn(0);
}

static PetscErrorCode CheckLayers(Net net)
{
  char        kinds[1024] = "", spec[4096], spec2[4096], *kind, *save = NULL;
  PetscInt    nl, P, expectP = -1, expectout = -1, outsize, k = 0;
  PetNetShape out;
  Net         net2;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetString(NULL, NULL, "-expect_kinds", kinds, sizeof(kinds), NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-expect_params", &expectP, NULL));
  PetscCall(PetscOptionsGetInt(NULL, NULL, "-expect_output", &expectout, NULL));
  PetscCall(NetGetNumLayers(net, &nl));
  for (kind = strtok_r(kinds, ",", &save); kind; kind = strtok_r(NULL, ",", &save), k++) {
    Layer     layer;
    LayerType type;
    PetscBool match;

    PetscCheck(k < nl, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The Net has %" PetscInt_FMT " layers, -expect_kinds lists more", nl);
    PetscCall(NetGetLayer(net, k, &layer));
    PetscCall(LayerGetType(layer, &type));
    PetscCall(PetscStrcmp(type, kind, &match));
    PetscCheck(match, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "Layer %" PetscInt_FMT " is \"%s\", expected \"%s\"", k, type, kind);
  }
  PetscCheck(k == nl, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The Net has %" PetscInt_FMT " layers, -expect_kinds lists %" PetscInt_FMT, nl, k);
  PetscCall(NetGetNumParameters(net, &P));
  PetscCheck(expectP < 0 || P == expectP, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The Net has %" PetscInt_FMT " parameters, expected %" PetscInt_FMT, P, expectP);
  PetscCall(NetGetOutputShape(net, &out));
  PetscCall(PetNetShapeSize(&out, &outsize));
  PetscCheck(expectout < 0 || outsize == expectout, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "The Net's output has %" PetscInt_FMT " entries, expected %" PetscInt_FMT, outsize, expectout);

  /* the spec rebuilds the same Net */
  PetscCall(NetGetSpec(net, sizeof(spec), spec));
  PetscCall(NetCreate(PETSC_COMM_WORLD, &net2));
  if (spec[0] && spec[strlen(spec) - 1] == ';')
    PetscCall(NetSetGraph(net2, spec)); /* a graph's entries end with ';' */
  else
    PetscCall(NetSetLayers(net2, spec));
  PetscCall(NetGetSpec(net2, sizeof(spec2), spec2));
  PetscCheck(!strcmp(spec, spec2), PETSC_COMM_WORLD, PETSC_ERR_PLIB, "NetGetSpec round trip: \"%s\" rebuilt as \"%s\"", spec, spec2);
  PetscCall(NetDestroy(&net2));
  PetscCall(CheckJacobian(net)); /* a forward pass: the layout must be consistent */
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%" PetscInt_FMT " layers as expected, %" PetscInt_FMT " parameters, output %" PetscInt_FMT "; spec %s\n", nl, P, outsize, spec));
  PetscFunctionReturn(0);
}

/*
  Statistics of one dense layer's weights w[nw] (fan_in, fan_out) for an initialisation kind; the biases must be zero.
  The sample standard deviation s of nw draws has a relative spread of about 1/sqrt(2 nw) (less for the uniform
  Xavier draw): we accept |s/sigma - 1| <= 5/sqrt(2 nw) (0.79% for 784 x 256 weights), |mean| <= 5 sigma/sqrt(nw).
*/
static PetscErrorCode CheckDenseStatistics(const char label[], LayerInitType init, PetscReal std, const PetscScalar *w, PetscInt fan_in, PetscInt fan_out)
{
  const PetscInt     nw   = fan_in * fan_out;
  const PetscScalar *b    = w + nw;
  PetscReal          mean = 0, var = 0, wmax = 0, sigma = 0, a = 0, tol = 5.0 / PetscSqrtReal(2.0 * nw);

  PetscFunctionBegin;
  for (PetscInt i = 0; i < fan_out; i++) PetscCheck(b[i] == 0.0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: bias[%" PetscInt_FMT "] = %g, biases must start at zero", label, i, (double)PetscRealPart(b[i]));
  for (PetscInt i = 0; i < nw; i++) {
    mean += PetscRealPart(w[i]);
    wmax = PetscMax(wmax, PetscAbsScalar(w[i]));
  }
  mean /= nw;
  for (PetscInt i = 0; i < nw; i++) var += PetscSqr(PetscRealPart(w[i]) - mean);
  var /= nw - 1;
  switch (init) {
  case LAYER_INIT_ZEROS:
    PetscCheck(wmax == 0, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: zeros initialisation has a weight of magnitude %g", label, (double)wmax);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  %-16s zeros    %6" PetscInt_FMT " weights all exactly zero, biases zero\n", label, nw));
    PetscFunctionReturn(0);
  case LAYER_INIT_KAIMING:
    sigma = PetscSqrtReal(2.0 / fan_in);
    break;
  case LAYER_INIT_NORMAL:
    sigma = std;
    break;
  case LAYER_INIT_XAVIER:
    a     = PetscSqrtReal(6.0 / (fan_in + fan_out));
    sigma = a / PetscSqrtReal(3.0);
    PetscCheck(wmax <= a, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: xavier weight of magnitude %g beyond the limit %g", label, (double)wmax, (double)a);
    PetscCheck(wmax >= a * (1 - 20.0 / nw), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: xavier weights reach only %g of the limit %g", label, (double)wmax, (double)a);
    break;
  }
  PetscCheck(PetscAbsReal(PetscSqrtReal(var) / sigma - 1) <= tol, PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: %s weights have standard deviation %g, expected %g within %.2f%%", label, LayerInitTypes[init], (double)PetscSqrtReal(var), (double)sigma,
             (double)(100 * tol));
  PetscCheck(PetscAbsReal(mean) <= 5 * sigma / PetscSqrtReal((PetscReal)nw), PETSC_COMM_SELF, PETSC_ERR_PLIB, "%s: %s weights have mean %g, expected 0 within %g", label, LayerInitTypes[init], (double)mean,
             (double)(5 * sigma / PetscSqrtReal((PetscReal)nw)));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "  %-16s %-8s %6" PetscInt_FMT " weights: std %.5f (expected %.5f, within %.2f%%), mean %+.1e", label, LayerInitTypes[init], nw, (double)PetscSqrtReal(var), (double)sigma, (double)(100 * tol), (double)mean));
  if (init == LAYER_INIT_XAVIER) PetscCall(PetscPrintf(PETSC_COMM_WORLD, ", max |w| %.5f <= %.5f", (double)wmax, (double)a));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, ", biases zero\n"));
  PetscFunctionReturn(0);
}

/* Checks every dense layer of net (replicated parameters in all) for initialisation init */
static PetscErrorCode CheckNetStatistics(Net net, Vec all, LayerInitType init, PetscReal std)
{
  PetscInt           nl;
  const PetscScalar *theta;

  PetscFunctionBegin;
  PetscCall(NetGetNumLayers(net, &nl));
  PetscCall(VecGetArrayRead(all, &theta));
  for (PetscInt l = 0; l < nl; l++) {
    Layer       layer;
    LayerType   type;
    PetscBool   dense;
    PetNetShape in, out;
    PetscInt    fan_in, fan_out, start;
    char        label[64];

    PetscCall(NetGetLayer(net, l, &layer));
    PetscCall(LayerGetType(layer, &type));
    PetscCall(PetscStrcmp(type, LAYERDENSE, &dense));
    if (!dense) continue;
    PetscCall(LayerGetInputShape(layer, &in));
    PetscCall(LayerGetOutputShape(layer, &out));
    PetscCall(PetNetShapeSize(&in, &fan_in));
    PetscCall(PetNetShapeSize(&out, &fan_out));
    PetscCall(NetGetLayerParameterRange(net, l, &start, NULL));
    PetscCall(PetscSNPrintf(label, sizeof(label), "layer %" PetscInt_FMT " %" PetscInt_FMT "x%" PetscInt_FMT, l, fan_out, fan_in));
    PetscCall(CheckDenseStatistics(label, init, std, theta + start, fan_in, fan_out));
  }
  PetscCall(VecRestoreArrayRead(all, &theta));
  PetscFunctionReturn(0);
}

/* Layer 0 dense initialised as -expect_init, layer 1 leakyrelu with slope -expect_slope */
static PetscErrorCode CheckPrefixed(Net net)
{
  PetscInt           init = LAYER_INIT_KAIMING, nl, fan_in, fan_out, n, rstart, rend;
  PetscReal          std = 0.01, slope = 0.01;
  PetscBool          flg;
  Vec                all, theta, X, Y;
  Layer              layer;
  LayerType          type;
  PetNetShape        in, out;
  PetscScalar       *th;
  const PetscScalar *y;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetEList(NULL, NULL, "-expect_init", LayerInitTypes, 4, &init, &flg));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-expect_std", &std, NULL));
  PetscCall(PetscOptionsGetReal(NULL, NULL, "-expect_slope", &slope, NULL));
  PetscCall(NetGetNumLayers(net, &nl));
  PetscCheck(nl == 2, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-check prefixed needs -net_layers dense:N,leakyrelu");
  PetscCall(NetGetLayer(net, 1, &layer));
  PetscCall(LayerGetType(layer, &type));
  PetscCall(PetscStrcmp(type, LAYERLEAKYRELU, &flg));
  PetscCheck(flg, PETSC_COMM_WORLD, PETSC_ERR_ARG_WRONG, "-check prefixed needs -net_layers dense:N,leakyrelu");

  PetscCall(GatherParameters(net, &all));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "layer 0 initialisation from the options:\n"));
  PetscCall(CheckNetStatistics(net, all, (LayerInitType)init, std));
  PetscCall(VecDestroy(&all));

  /* W = 0, b_k = +-(k+1) alternating: the output is leakyrelu(b), slope * b where b < 0, whatever the input */
  PetscCall(NetGetLayer(net, 0, &layer));
  PetscCall(LayerGetInputShape(layer, &in));
  PetscCall(LayerGetOutputShape(layer, &out));
  PetscCall(PetNetShapeSize(&in, &fan_in));
  PetscCall(PetNetShapeSize(&out, &fan_out));
  PetscCall(NetGetParameters(net, &theta));
  PetscCall(VecGetOwnershipRange(theta, &rstart, &rend));
  PetscCall(VecGetArray(theta, &th));
  for (PetscInt i = rstart; i < rend; i++) {
    PetscInt k = i - fan_in * fan_out;

    th[i - rstart] = k < 0 ? 0.0 : (k % 2 ? 1.0 : -1.0) * (k + 1);
  }
  PetscCall(VecRestoreArray(theta, &th));
  PetscCall(NetCreateVecs(net, 2, &X, &Y));
  PetscCall(VecSet(X, 1.0));
  PetscCall(NetForward(net, X, Y));
  PetscCall(VecGetLocalSize(Y, &n));
  PetscCall(VecGetArrayRead(Y, &y));
  for (PetscInt i = 0; i < n; i++) {
    PetscInt  k = i % fan_out;
    PetscReal b = (k % 2 ? 1.0 : -1.0) * (k + 1), expect = b > 0 ? b : slope * b;

    PetscCheck(y[i] == expect, PETSC_COMM_SELF, PETSC_ERR_PLIB, "leakyrelu output %g for input %g: the slope is not %g", (double)PetscRealPart(y[i]), (double)b, (double)slope);
  }
  PetscCall(VecRestoreArrayRead(Y, &y));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "layer 1 leakyrelu slope %g on negative inputs\n", (double)slope));
  PetscCall(VecDestroy(&X));
  PetscCall(VecDestroy(&Y));
  PetscFunctionReturn(0);
}

/* Every initialisation kind on a 784-256-128-10 MLP, built on WORLD and on SELF with the same seed */
static PetscErrorCode CheckInit(void)
{
  const LayerInitType kinds[] = {LAYER_INIT_KAIMING, LAYER_INIT_XAVIER, LAYER_INIT_NORMAL, LAYER_INIT_ZEROS};
  const PetscReal     std     = 0.05;
  PetNetShape         in      = {1, {784}};
  Net                 netw, nets;

  PetscFunctionBegin;
  PetscCall(NetCreate(PETSC_COMM_WORLD, &netw));
  PetscCall(NetCreate(PETSC_COMM_SELF, &nets));
  PetscCall(NetSetLayers(netw, "dense:256,relu,dense:128,relu,dense:10"));
  PetscCall(NetSetLayers(nets, "dense:256,relu,dense:128,relu,dense:10"));
  PetscCall(NetSetInputShape(netw, &in));
  PetscCall(NetSetInputShape(nets, &in));
  PetscCall(NetSetSeed(netw, 2024));
  PetscCall(NetSetSeed(nets, 2024));
  PetscCall(NetSetUp(netw));
  PetscCall(NetSetUp(nets));
  for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
    Vec       all, thetas;
    PetscInt  nl, N;
    PetscBool same;

    PetscCall(NetGetNumLayers(netw, &nl));
    for (PetscInt l = 0; l < nl; l++) {
      Layer layer;

      PetscCall(NetGetLayer(netw, l, &layer));
      PetscCall(LayerDenseSetInitialization(layer, kinds[k], std)); /* ignored by the other kinds */
      PetscCall(NetGetLayer(nets, l, &layer));
      PetscCall(LayerDenseSetInitialization(layer, kinds[k], std));
    }
    PetscCall(NetInitializeParameters(netw));
    PetscCall(NetInitializeParameters(nets));
    PetscCall(GatherParameters(netw, &all));
    PetscCall(NetGetParameters(nets, &thetas));
    PetscCall(VecGetSize(all, &N));
    {
      const PetscScalar *a, *b;

      PetscCall(VecGetArrayRead(all, &a));
      PetscCall(VecGetArrayRead(thetas, &b));
      same = PETSC_TRUE; /* exact equality */
      for (PetscInt i = 0; i < N; i++) same = (PetscBool)(same && a[i] == b[i]);
      PetscCall(VecRestoreArrayRead(thetas, &b));
      PetscCall(VecRestoreArrayRead(all, &a));
    }
    PetscCallMPI(MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPIU_BOOL, MPI_LAND, PETSC_COMM_WORLD));
    PetscCheck(same, PETSC_COMM_WORLD, PETSC_ERR_PLIB, "%s: the parameters on PETSC_COMM_WORLD differ from those on PETSC_COMM_SELF for the same seed", LayerInitTypes[kinds[k]]);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s%s (%" PetscInt_FMT " parameters, identical on PETSC_COMM_WORLD and PETSC_COMM_SELF):\n", LayerInitTypes[kinds[k]], kinds[k] == LAYER_INIT_NORMAL ? " std 0.05" : "", N));
    PetscCall(CheckNetStatistics(netw, all, kinds[k], std));
    PetscCall(VecDestroy(&all));
  }
  PetscCall(NetDestroy(&netw));
  PetscCall(NetDestroy(&nets));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  char      check[64] = "view", prefix[64] = "";
  PetscBool match;
  Net       net = NULL;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-check", check, sizeof(check), NULL));
  PetscCall(PetscOptionsGetString(NULL, NULL, "-prefix", prefix, sizeof(prefix), NULL));
  PetscCall(PetscStrcmp(check, "init", &match));
  if (match)
    PetscCall(CheckInit());
  else
    PetscCall(CreateNetFromOptions(PETSC_COMM_WORLD, prefix, &net));
  PetscCall(PetscStrcmp(check, "jacobian", &match));
  if (match) PetscCall(CheckJacobian(net));
  PetscCall(PetscStrcmp(check, "layers", &match));
  if (match) PetscCall(CheckLayers(net));
  PetscCall(PetscStrcmp(check, "prefixed", &match));
  if (match) PetscCall(CheckPrefixed(net));
  PetscCall(NetDestroy(&net));
  PetscCall(PetscFinalize());
  return 0;
}
