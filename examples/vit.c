static const char help[] = "Train a vision transformer on Fashion-MNIST (the packaged IDX files) and report the test accuracy.\n"
                           "The image is cut into P x P patches, each a token of E features (conv2d:E:P:P:0), with a learned position table,\n"
                           "then -vit_depth pre-norm transformer blocks, a final layernorm, the mean over the tokens and dense:10.\n"
                           "Its sizes: -vit_patch P (a divisor of 28), -vit_embed E, -vit_depth L, -vit_heads H, -vit_mlp F; share/models/vit.opts\n"
                           "is the tuned configuration. Datasets use prefixes train_ and test_ (-train_dataset_limit 1000); the Net reads -net_*,\n"
                           "the optimizer -tao_*, the Trainer -trainer_*. -net_save FILE saves the trained Net; bin/predict -net_load FILE evaluates it.\n"
                           "Ends with one line: summary: model=vit params= patch= depth= heads= test_accuracy= train_time_s= ranks= precision= parallel= ...\n";

#include <petnet.h>
#include <petnettrainer.h>
#include "fashion/fashiondata.h"

/* The sizes of the model, from -vit_* */
typedef struct {
  PetscInt patch; /* P: patches of P x P pixels, one token each */
  PetscInt embed; /* E: features of a token */
  PetscInt depth; /* L: transformer blocks */
  PetscInt heads; /* H: attention heads (a divisor of E) */
  PetscInt mlp;   /* F: hidden features of each block's MLP */
} ViTSizes;

/*
  The layer list of the model on images of h x w x c (channels last), one sample's shapes in brackets:

    conv2d:E:P:P:0       (h, w, c) -> (h/P, w/P, E)   the patch embedding: one P x P patch, stride P, is one token
    reshape:TxE          -> (T, E), T = (h/P)(w/P)    the tokens in row-major patch order
    position:T           -> (T, E)                    + a learned table [T][E]
    transformer:H:F      -> (T, E)                    L times: x + attention(layernorm(x)), then x + MLP(layernorm(x))
    layernorm            -> (T, E)                    the final norm of a pre-norm stack
    reshape:(h/P)x(w/P)xE, globalavgpool -> (E)       the mean over the T tokens
    dense:10             -> (10)                      the class scores

  Mean pooling rather than a class token: no extra token (T, not T + 1, in every block), no layer kind that prepends a
  learned row to a sequence, and for small images it trains as well or better (Beyer et al. 2022, "Better plain ViT
  baselines for ImageNet-1k"; PyTorch's reference share/bench/vit_torch.py pools the same way).
*/
static PetscErrorCode ViTLayers(MPI_Comm comm, const ViTSizes *s, const PetNetShape *image, size_t len, char layers[])
{
  PetscInt64 h, w, T;
  char       item[256];
  size_t     used;

  PetscFunctionBegin;
  PetscCheck(image->ndim == 3, comm, PETSC_ERR_ARG_SIZ, "bin/vit needs images of shape (h, w, c), but the training Dataset gives %" PetscInt_FMT " dimensions: give -train_dataset_sample_shape 28x28x1", image->ndim);
  h = image->dim[0];
  w = image->dim[1];
  PetscCheck(h % s->patch == 0 && w % s->patch == 0, comm, PETSC_ERR_ARG_OUTOFRANGE,
             "-vit_patch %" PetscInt_FMT " does not divide the %" PetscInt64_FMT "x%" PetscInt64_FMT " images into whole patches: give a divisor of the image side (for Fashion-MNIST's 28x28: 1, 2, 4, 7, 14 or 28)", s->patch, h, w);
  PetscCheck(s->embed % s->heads == 0, comm, PETSC_ERR_ARG_OUTOFRANGE, "-vit_heads %" PetscInt_FMT " does not divide -vit_embed %" PetscInt_FMT ": each head takes E/H features; give heads that divide the embedding (e.g. -vit_heads 4 -vit_embed 64)",
             s->heads, s->embed);
  h /= s->patch;
  w /= s->patch;
  T = h * w;
  PetscCheck(T * s->embed <= PETSC_MAX_INT, comm, PETSC_ERR_ARG_OUTOFRANGE, "%" PetscInt64_FMT " tokens of -vit_embed %" PetscInt_FMT " features do not fit a PetscInt: take a larger -vit_patch or a smaller -vit_embed", T, s->embed);
  PetscCall(PetscSNPrintf(layers, len, "conv2d:%" PetscInt_FMT ":%" PetscInt_FMT ":%" PetscInt_FMT ":0,reshape:%" PetscInt64_FMT "x%" PetscInt_FMT ",position:%" PetscInt64_FMT, s->embed, s->patch, s->patch, T, s->embed, T));
  for (PetscInt l = 0; l < s->depth; l++) { /* the pre-norm block transformer:H:F, written out */
    PetscCall(PetscSNPrintf(item, sizeof(item), ",residual(layernorm,attention:%" PetscInt_FMT "),residual(layernorm,dense:%" PetscInt_FMT ":tokens,gelu,dense:%" PetscInt_FMT ":tokens)", s->heads, s->mlp, s->embed));
    PetscCall(PetscStrlcat(layers, item, len));
  }
  PetscCall(PetscSNPrintf(item, sizeof(item), ",layernorm,reshape:%" PetscInt64_FMT "x%" PetscInt64_FMT "x%" PetscInt_FMT ",globalavgpool,dense:10", h, w, s->embed));
  PetscCall(PetscStrlcat(layers, item, len));
  PetscCall(PetscStrlen(layers, &used));
  PetscCheck(used + 1 < len, comm, PETSC_ERR_ARG_OUTOFRANGE, "The layer list of -vit_depth %" PetscInt_FMT " blocks does not fit the %zu characters bin/vit keeps for it: take a smaller -vit_depth", s->depth, len);
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm        comm;
  Dataset         train, test;
  Net             net;
  Loss            loss;
  Trainer         trainer;
  Tao             tao;
  TaoType         taotype;
  ViTSizes        sizes = {4, 64, 4, 4, 128};
  PetNetShape     image;
  char            dir[PETSC_MAX_PATH_LEN] = "/usr/share/datasets/fashion-mnist", layers[16384];
  PetscInt        epochs, nparams, Ntrain, Ntest, nthreads;
  PetscReal       trainloss, testloss, testacc, seconds;
  PetscMPIInt     size;
  NetPrecision    precision;
  NetBackend      backend;
  NetParallelType parallel;
  PetscBool       given;

  PetscCall(PetNetInitialize(&argc, &argv, NULL, help));
  comm = PETSC_COMM_WORLD;
  PetscCallMPI(MPI_Comm_size(comm, &size));
  PetscOptionsBegin(comm, NULL, "Vision transformer on Fashion-MNIST", NULL);
  PetscCall(PetscOptionsString("-fashion_dir", "Folder with the IDX files", NULL, dir, dir, sizeof(dir), NULL));
  PetscCall(PetNetOptionsBoundedInt("-vit_patch", "Patch side P in pixels (a divisor of the image side): one token per P x P patch", NULL, sizes.patch, &sizes.patch, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-vit_embed", "Features E of a token", NULL, sizes.embed, &sizes.embed, NULL, 1));
  PetscCall(PetNetOptionsRangeInt("-vit_depth", "Transformer blocks", NULL, sizes.depth, &sizes.depth, NULL, 0, 64));
  PetscCall(PetNetOptionsBoundedInt("-vit_heads", "Attention heads (a divisor of -vit_embed)", NULL, sizes.heads, &sizes.heads, NULL, 1));
  PetscCall(PetNetOptionsBoundedInt("-vit_mlp", "Hidden features of each block's MLP", NULL, sizes.mlp, &sizes.mlp, NULL, 1));
  PetscOptionsEnd();
  /* the model is the -vit_* sizes: a layer list of the user's own would make the summary's patch, depth and heads lie */
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_layers", &given));
  PetscCheck(!given, comm, PETSC_ERR_ARG_INCOMP, "bin/vit builds its Net from -vit_patch, -vit_embed, -vit_depth, -vit_heads and -vit_mlp: drop -net_layers (bin/fashion trains any layer list)");
  PetscCall(PetscOptionsHasName(NULL, NULL, "-net_graph", &given));
  PetscCheck(!given, comm, PETSC_ERR_ARG_INCOMP, "bin/vit builds its Net from -vit_patch, -vit_embed, -vit_depth, -vit_heads and -vit_mlp: drop -net_graph (bin/fashion trains any graph)");

  PetscCall(FashionCreateDatasets(comm, dir, &train, &test));
  /* the image's shape sets the number of tokens: read the training set now (the Trainer's set-up does not read it again) */
  PetscCall(DatasetSetUp(train));
  PetscCall(DatasetGetSampleShape(train, &image));
  PetscCall(ViTLayers(comm, &sizes, &image, sizeof(layers), layers));

  PetscCall(NetCreate(comm, &net));
  PetscCall(NetSetLayers(net, layers));
  PetscCall(NetSetFromOptions(net));
  PetscCall(LossCreate(comm, &loss));
  PetscCall(LossSetType(loss, LOSSCROSSENTROPY));
  PetscCall(LossSetFromOptions(loss));

  PetscCall(TrainerCreate(comm, &trainer));
  PetscCall(TrainerSetNet(trainer, net));
  PetscCall(TrainerSetLoss(trainer, loss));
  PetscCall(TrainerSetDatasets(trainer, train, test));
  PetscCall(TrainerSetFromOptions(trainer));
  PetscCall(TrainerTrain(trainer));
  PetscCall(TrainerGetResults(trainer, &epochs, &trainloss, &testloss, &testacc, &seconds));

  PetscCall(TrainerGetTao(trainer, &tao));
  PetscCall(TaoGetType(tao, &taotype));
  PetscCall(NetGetNumParameters(net, &nparams));
  PetscCall(DatasetGetSize(train, &Ntrain));
  PetscCall(DatasetGetSize(test, &Ntest));
  PetscCall(NetGetPrecision(net, &precision));
  PetscCall(NetGetBackend(net, &backend));
  PetscCall(NetGetParallel(net, &parallel));
  PetscCall(PetNetGetNumThreads(&nthreads));
  /* the keys of issue 32 first, in its order; then the rest of the run */
  PetscCall(PetscPrintf(comm, "summary: model=vit params=%" PetscInt_FMT " patch=%" PetscInt_FMT " depth=%" PetscInt_FMT " heads=%" PetscInt_FMT " test_accuracy=%.4f train_time_s=%.2f ranks=%d precision=%s parallel=%s", nparams, sizes.patch,
                        sizes.depth, sizes.heads, (double)testacc, (double)seconds, size, NetPrecisions[precision], NetParallelTypes[parallel]));
  PetscCall(PetscPrintf(comm, " embed=%" PetscInt_FMT " mlp=%" PetscInt_FMT " optimizer=%s epochs=%" PetscInt_FMT " train_samples=%" PetscInt_FMT " test_samples=%" PetscInt_FMT " train_loss=%.6f test_loss=%.6f threads=%" PetscInt_FMT, sizes.embed,
                        sizes.mlp, taotype, epochs, Ntrain, Ntest, (double)trainloss, (double)testloss, nthreads));
  PetscCall(PetscPrintf(comm, " backend=%s", NetBackends[backend])); /* who runs the float GEMMs (-net_backend) */
  {                                                                  /* the BLAS's kernels (issue 31): a rate is read with what it ran on */
    const char *blascore;

    PetscCall(PetNetGetBLASInfo(NULL, &blascore));
    PetscCall(PetscPrintf(comm, " blas_core=%s\n", blascore));
  }

  PetscCall(TrainerDestroy(&trainer));
  PetscCall(LossDestroy(&loss));
  PetscCall(NetDestroy(&net));
  PetscCall(DatasetDestroy(&train));
  PetscCall(DatasetDestroy(&test));
  PetscCall(PetscFinalize());
  return 0;
}
