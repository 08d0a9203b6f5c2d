/*
  PyTorch's layout of a Net's tensors, which the HDF5 model files hold from format version 3 on (netiohdf5.c).

  Two things differ between PetNet's parameters and PyTorch's state_dict of the equivalent model:

    conv weights    PetNet [out][kh][kw][cin/groups], PyTorch [out][cin/groups][kh][kw] (conv2d), and
                    PetNet [out][kd][kh][kw][cin/groups], PyTorch [out][cin/groups][kd][kh][kw] (conv3d):
                    LAYER_TENSOR_CHANNELS_LAST, the second dim of PyTorch's shape moved last
    flat features   PetNet flattens an (h, w, c) sample in that order; PyTorch's nn.Flatten of NCHW data gives
                    (c, h, w); the same for (d, h, w, c) and NCDHW's (c, d, h, w). With S = h w (or d h w) positions
                    p, a tensor indexed by such features (LAYER_TENSOR_FEATURES: the columns of a dense weight, the
                    four tensors of a batchnorm on flat data) is permuted:
                      torch[.., ci S + p] = ours[.., p c + ci]

  Which (h, w, c) or (d, h, w, c) tensor, if any, a node's flat input features come from is a property of the graph,
  found here node by node (the origin, kept as its positions S and channels c): the input of a node whose input is
  (h, w, c) or (d, h, w, c) itself (a dense layer flattens implicitly); else the
  origin of its inputs' output, where a flatten of such a tensor sets it, a layer whose tensors all index features one to
  one (batchnorm on (f)) or that has none and keeps the size (relu, dropout, add, ...) passes it on, and any other
  layer (dense, ode, concat, globalavgpool, ...) ends it. Inputs whose origins differ (an add of a flattened tensor and
  a dense layer's output) end it too: PetNet's order is kept there, and such a Net has no PyTorch nn.Sequential
  equivalent (share/python/petnet_torch.py refuses to build one). The permutation is a bijection fixed by the
  architecture, so a file read back by PetNet gives the saved Net bit for bit in any case.
*/
#include "netio.h"

/* Is the shape an image or a volume, (h, w, c) or (d, h, w, c)? */
static PetscBool NetIOSpatial_Private(const PetNetShape *s)
{
  return s->ndim == 3 || s->ndim == 4 ? PETSC_TRUE : PETSC_FALSE;
}

/* The positions S and channels c of an (h, w, c) or (d, h, w, c) shape whose flattening orders differ between PetNet
   and PyTorch (S > 1 and c > 1), or zeros */
static void NetIOOrigin_Private(const PetNetShape *s, PetscInt origin[2])
{
  PetscInt64 S = 1;

  origin[0] = origin[1] = 0;
  if (!NetIOSpatial_Private(s)) return;
  for (PetscInt d = 0; d < s->ndim - 1; d++) S *= s->dim[d];
  if (S > 1 && s->dim[s->ndim - 1] > 1) {
    origin[0] = (PetscInt)S; /* S c is a sample's size, a PetscInt */
    origin[1] = s->dim[s->ndim - 1];
  }
}

/* Does the layer map flat features one to one (keeping their order)? */
static PetscErrorCode NetIOKeepsFeatures_Private(Layer layer, PetscBool *keeps)
{
  LayerTensorInfo info[LAYER_MAX_TENSORS];
  PetscInt        nt;

  PetscFunctionBegin;
  *keeps = layer->in.ndim == 1 && layer->out.ndim == 1 && layer->insize == layer->outsize ? PETSC_TRUE : PETSC_FALSE;
  if (!*keeps) PetscFunctionReturn(0);
  PetscCall(LayerGetTensors(layer, &nt, info));
  for (PetscInt t = 0; t < nt; t++)
    if (info[t].layout != LAYER_TENSOR_FEATURES || info[t].ndim != 1) *keeps = PETSC_FALSE;
  PetscFunctionReturn(0);
}

/*@C
  NetIOFeatureOrigins_Private - for every node of a set-up Net, the (h, w, c) or (d, h, w, c) shape whose flattening
  gave the node's flat input features, where PetNet's order of them differs from PyTorch's

  Input Parameter:
. net - the Net, set up

  Output Parameter:
. origin - origin[2 k], origin[2 k + 1]: the positions S (h w, or d h w) and the channels c of node k's origin, or
           zeros when both orders agree; free with PetscFree()

  Level: developer
@*/
PetscErrorCode NetIOFeatureOrigins_Private(Net net, PetscInt **origin)
{
  PetscInt *in, *out; /* the origins of each node's input (the result) and of its output */

  PetscFunctionBegin;
  PetscCall(PetscCalloc1(2 * net->nlayers, origin));
  PetscCall(PetscCalloc1(2 * net->nlayers, &out));
  in = *origin;
  for (PetscInt k = 0; k < net->nlayers; k++) {
    NetNode  *nd    = &net->nodes[k];
    Layer     layer = nd->layer;
    PetscBool flatten, keeps;

    if (NetIOSpatial_Private(&layer->in))
      NetIOOrigin_Private(&layer->in, in + 2 * k);
    else {
      for (PetscInt i = 0; i < nd->nin; i++) {
        PetscInt src = nd->in[i], o[2] = {0, 0};

        if (src >= 0 && src < k) { /* NET_INPUT (the Net's input) has PetNet's and PyTorch's order */
          o[0] = out[2 * src];
          o[1] = out[2 * src + 1];
        }
        if (i == 0) {
          in[2 * k]     = o[0];
          in[2 * k + 1] = o[1];
        } else if (o[0] != in[2 * k] || o[1] != in[2 * k + 1])
          in[2 * k] = in[2 * k + 1] = 0;
      }
    }
    PetscCall(PetscObjectTypeCompare((PetscObject)layer, LAYERFLATTEN, &flatten));
    PetscCall(NetIOKeepsFeatures_Private(layer, &keeps));
    if (flatten && NetIOSpatial_Private(&layer->in))
      NetIOOrigin_Private(&layer->in, out + 2 * k);
    else if (keeps) {
      out[2 * k]     = in[2 * k];
      out[2 * k + 1] = in[2 * k + 1];
    }
  }
  PetscCall(PetscFree(out));
  PetscFunctionReturn(0);
}

/* PetNet's index of PyTorch's feature q = ci S + p of an origin of S positions p and c channels ci */
static inline PetscInt NetIOFeature_Private(const PetscInt origin[2], PetscInt q)
{
  const PetscInt S = origin[0], c = origin[1];

  return (q % S) * c + q / S;
}

/* Does tensor t of a node with this origin need its features permuted? */
static PetscBool NetIOPermutesFeatures_Private(const LayerTensorInfo *t, const PetscInt origin[2])
{
  return t->layout == LAYER_TENSOR_FEATURES && origin[0] && t->ndim >= 1 && t->dims[t->ndim - 1] == origin[0] * origin[1] ? PETSC_TRUE : PETSC_FALSE;
}

/* One loop for both directions: element e of PetNet's layout is element torch(e) of PyTorch's */
static PetscErrorCode NetIOConvert_Private(const LayerTensorInfo *t, const PetscInt origin[2], PetscBool totorch, const PetscScalar *from, PetscScalar *to)
{
  PetscFunctionBegin;
  if (t->layout == LAYER_TENSOR_CHANNELS_LAST && t->ndim >= 3) {
    /* ours [o][k...][g], PyTorch's [o][g][k...]: k... the kernel's K = dims[2] ... dims[ndim-1] taps (kh kw, or kd kh kw) */
    const PetscInt d0 = t->dims[0], g1 = t->dims[1];
    PetscInt       K = 1;

    for (PetscInt d = 2; d < t->ndim; d++) K *= t->dims[d];
    for (PetscInt o = 0; o < d0; o++)
      for (PetscInt g = 0; g < g1; g++)
        for (PetscInt k = 0; k < K; k++) {
          const PetscInt pt = (o * g1 + g) * K + k, us = (o * K + k) * g1 + g;

          if (totorch)
            to[pt] = from[us];
          else
            to[us] = from[pt];
        }
  } else if (NetIOPermutesFeatures_Private(t, origin)) { /* features in (h, w, c) order here, (c, h, w) in PyTorch */
    const PetscInt f = t->dims[t->ndim - 1], rows = t->size / f;

    for (PetscInt r = 0; r < rows; r++)
      for (PetscInt q = 0; q < f; q++) {
        const PetscInt pt = r * f + q, us = r * f + NetIOFeature_Private(origin, q);

        if (totorch)
          to[pt] = from[us];
        else
          to[us] = from[pt];
      }
  } else
    PetscCall(PetscArraycpy(to, from, t->size));
  PetscFunctionReturn(0);
}

/*@C
  NetIOToTorch_Private - a tensor's values from PetNet's layout into PyTorch's (row-major in the shape t->dims)

  Input Parameters:
+ t      - the tensor (LayerGetTensors())
. origin - the origin (positions, channels) of its node's flat input features (NetIOFeatureOrigins_Private()), or zeros
- ours   - its t->size values as the layer holds them

  Output Parameter:
. torch - its t->size values in PyTorch's layout (not ours)

  Level: developer
@*/
PetscErrorCode NetIOToTorch_Private(const LayerTensorInfo *t, const PetscInt origin[2], const PetscScalar *ours, PetscScalar *torch)
{
  PetscFunctionBegin;
  PetscCall(NetIOConvert_Private(t, origin, PETSC_TRUE, ours, torch));
  PetscFunctionReturn(0);
}

/*@C
  NetIOFromTorch_Private - the inverse of NetIOToTorch_Private(): PyTorch's layout into PetNet's

  Input Parameters:
+ t      - the tensor
. origin - the origin of its node's flat input features
- torch  - its t->size values in PyTorch's layout

  Output Parameter:
. ours - the values in PetNet's layout (not torch)

  Level: developer
@*/
PetscErrorCode NetIOFromTorch_Private(const LayerTensorInfo *t, const PetscInt origin[2], const PetscScalar *torch, PetscScalar *ours)
{
  PetscFunctionBegin;
  PetscCall(NetIOConvert_Private(t, origin, PETSC_FALSE, torch, ours));
  PetscFunctionReturn(0);
}
