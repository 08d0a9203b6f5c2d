#!/usr/bin/python3
"""PetNet <-> PyTorch: the reference implementation of PetNet's HDF5 model files.

A model file written by NetSave(net, "model.h5") (format version 4) holds
    /petnet          group; attributes version (int), spec (str), input_shape (str), nparams (int), nbuffers (int),
                     grid (int, version 4: the spatial dims of a grid-mode Net, else 0), header_crc32 (str, version 4:
                     header_checksum() of the others and the normalisation below)
    /<l>.<name>      the state_dict of the equivalent nn.Sequential (one module per PetNet layer: "0.weight",
                     "0.bias", "3.running_mean", "3.num_batches_tracked", "5.res.0.weight", "5.shortcut.0.bias", ...),
                     each tensor a dataset in PyTorch's shape and layout (float64; num_batches_tracked int64 scalar),
                     with attributes "shape" (its PyTorch shape, "out,in") and "crc32" (CRC-32 of its values as
                     little-endian float64, row-major, 8 hex digits); load() verifies it
So h5py + torch.from_numpy + load_state_dict(strict=True) on the equivalent PyTorch model reproduce PetNet's outputs
(a dense layer directly on an (h, w, c) or (d, h, w, c) input, where PetNet flattens implicitly, is FlattenLinear
here, or nn.Flatten() followed by nn.Linear in a model of your own).
Optional float64 attributes input_scale, input_mean, input_std of /petnet (format version 3): the input
normalisation x -> (input_scale x - input_mean) / input_std the Net was trained with.
The spec is PetNet's compact layer list (-net_layers), e.g. "conv2d:8:3:1:1,relu,maxpool:2,flatten,dense:10";
input_shape is one sample's shape, channels last ("784", "28x28x1" or, for volumes, "16x32x32x4").

Files of format versions 1 and 2 (PetNet before 2026-11-24) hold every tensor flattened in PetNet's own layout; this
script still reads them (and writes them with save(..., version=2), for tests):
    conv2d weight   [out][kh][kw][cin/groups] (while its "shape" attribute is PyTorch's out,cin/groups,kh,kw):
                    torch = file.reshape(out, kh, kw, cg).permute(0, 3, 1, 2)
    flattened data  PetNet flattens (h, w, c) in that order, PyTorch's nn.Flatten of NCHW in (c, h, w) order. Each
                    tensor indexed by such features is permuted: the columns of the next dense (Linear) weight, and
                    the four tensors of a batchnorm (BatchNorm1d) between the flatten and that dense layer.
                    Not handled (refused with a message): a residual block on such features whose F and shortcut
                    give different orders (e.g. flatten,residual(relu|dense:N)); put a dense layer before the block.
    num_batches_tracked is not in them (it loads as 0).
PetNet is channels-last, PyTorch is NCHW: a model for (h, w, c) samples takes NCHW batches [n][c][h][w], one for
(d, h, w, c) volumes NCDHW batches [n][c][d][h][w]; to_torch_batch() and from_torch_batch() convert batches. In model
files conv3d weights are PyTorch's [out][cin/groups][kd][kh][kw], and the features of a flattened volume come in
PyTorch's (c, d, h, w) order, as those of a flattened image in (c, h, w) order.

Models: an nn.Sequential, or any nn.Module whose forward is a chain of the supported modules (torch.fx traces it;
torch.flatten(x, 1) and the functional relu/tanh/sigmoid count as modules), e.g. class Net(nn.Module) with
conv1, pool, fc1 called in sequence. The file's names are PetNet's ("0.weight", ...); load_into(model, path) loads a
file into such a model under its own state_dict names.

Graphs (-net_graph, NetSetGraph(): "stem = conv2d:8:3:1:1 <- input; a = relu <- stem; s = add <- a, stem; ..."): a file
whose spec is a graph loads as a Graph, an nn.Module with one submodule per node under the node's name (state_dict
keys "stem.weight", as in the file) whose forward walks the nodes: add is +, concat torch.cat(dim=1) (the channels of
NCHW data, PetNet's last dimension). Any nn.Module whose forward torch.fx traces into supported modules, additions
(x + y, torch.add) and torch.cat(..., dim=1), with values used by several nodes (skip connections, U-Net joins), saves
as a graph: its nodes are named after torch.fx's node names (conv1, add, cat, block_conv1, ...), the input is "input".
graph_spec(model), build_graph(spec, input_shape), spec_of(model) (a list or a graph, as NetGetSpec()).

ONNX: export_onnx() (torch.onnx.export of the loaded model, lists and graphs) and from_onnx() / import_onnx(): an ONNX
graph of the operators PetNet has (ONNX_IMPORTS: Gemm, MatMul + Add, Conv, ConvTranspose, the activations, the pools,
BatchNormalization, Flatten, Reshape to (n, -1), Add, Concat, Resize/Upsample) becomes a Graph and a PetNet file; any
other operator is a ValueError naming the ONNX node and its operator. onnx 1.12 (Debian) has no onnx.reference:
onnx_evaluate() evaluates the ONNX graph node by node from its own attributes and initializers.

    load(path)                        -> (model, input_shape)   an nn.Sequential in float64 with the weights, eval mode
    load_into(model, path)            the file's tensors into a model of yours (an nn.Sequential or nn.Module)
    save(model, input_shape, path)    writes a file NetLoad() reads (the spec is derived from the modules)
    build_sequential(spec, input_shape), spec_from_sequential(model), forward(model, x, input_shape)
    charlm_state_dict(path)           a bin/charlm model file under nanoGPT's names (share/bench/charlm_torch.py's GPT)
    charlm_save(state, path, heads, context=None)  and back: a nanoGPT-named state_dict -> a file bin/charlm loads
    encoder_state_dict(path)          a file of transformer:H:F blocks [+ layernorm] under nn.TransformerEncoder's names
    encoder_layer(E, H, F, causal)    the nn.TransformerEncoderLayer (or CausalEncoderLayer) of transformer:H:F[:causal]

Command line:
    petnet_torch.py check MODEL.h5 DATA.h5 [--after AFTER.h5] [--rtol 1e-12]
        evaluates the model in PyTorch (eval mode) on DATA's "input" [n][in] and compares with DATA's "output";
        if DATA has "output_train": also one training-mode pass (batch statistics) against it, and the model after
        that pass (running statistics) against AFTER.h5 (default MODEL_after.h5)
    petnet_torch.py export SPEC INPUT_SHAPE MODEL.h5 DATA.h5 [--seed 0] [--samples 10] [--train]
        a PyTorch model with random weights -> MODEL.h5, and a random input with PyTorch's output -> DATA.h5
        (--train: also the training-mode output, and the model after that pass in MODEL_after.h5)
    petnet_torch.py onnx MODEL.h5 MODEL.onnx
        exports the model (evaluation mode, NCHW input; a layer list or a graph) to ONNX with torch.onnx.export, checked
        by onnx.checker, and evaluates the ONNX graph node by node (onnx_evaluate) against PyTorch
    petnet_torch.py onnx-import MODEL.onnx MODEL.h5 [--data DATA.h5] [--samples 5]
        an ONNX model of the operators PetNet has (ONNX_IMPORTS) -> a PetNet model file (a graph, -net_graph); with
        --data a random input and the ONNX graph's output on it (evaluated node by node), for bin/tests/test_io
    petnet_torch.py selftest PETNET_PREFIX TORCH_PREFIX
        check PETNET_PREFIX.h5 against PETNET_PREFIX_data.h5 (written by PetNet), then export a PyTorch model
        to TORCH_PREFIX.h5 / TORCH_PREFIX_data.h5 and verify that it reads back unchanged (tests/io.suite)

Layer kinds (PetNet -> PyTorch):
    dense:N[:bias=0] -> Linear (FlattenLinear on an (h, w, c) or (d, h, w, c) input), dense:N:tokens -> TokenLinear
    (nn.Linear on the last dim of (N, T, E) data; weight [N][E]), relu -> ReLU,
    leakyrelu:a -> LeakyReLU(a), tanh -> Tanh, sigmoid -> Sigmoid, gelu -> GELU (erf form), softplus -> Softplus,
    identity -> Identity,
    conv2d:OUT[:K[:STRIDE[:PAD[:D[:G]]]]][:dilation=D][:groups=G][:bias=0] -> Conv2d (K, STRIDE, PAD, D as 3 or 3x5),
    conv3d:OUT[:K[:STRIDE[:PAD[:D[:G]]]]][:dilation=D][:groups=G][:bias=0] -> Conv3d (K, STRIDE, PAD, D as 3 or 3x3x5),
    maxpool:K[:STRIDE[:PAD[:DILATION]]] -> MaxPool2d on (h, w, c), MaxPool3d on (d, h, w, c); avgpool:K[:STRIDE[:PAD]] ->
    AvgPool2d / AvgPool3d (count_include_pad=True: padded taps count as zeros, the divisor is always the window's
    size, as PetNet), globalavgpool -> GlobalAvgPool (saving also accepts AdaptiveAvgPool2d(1) or
    AdaptiveAvgPool3d(1) followed by Flatten), flatten -> Flatten, dropout:P -> Dropout(P),
    batchnorm[:MOMENTUM[:EPS]] -> BatchNorm3d on (d, h, w, c), BatchNorm2d on (h, w, c), BatchNorm1d on (f),
    residual(F) / residual(F|P) -> Residual,
    layernorm[:noaffine][:eps=EPS] -> LayerNorm(E, eps, elementwise_affine) on (f) or (T, E) (the last dimension),
    embedding:V:E -> TokenEmbedding(V, E) (nn.Embedding on ids stored as floats, as PetNet's inputs are); rmsnorm has
    no PyTorch module in torch 1.13 and stays PetNet's,
    transformer:H:F[:causal] on (T, E) -> nn.TransformerEncoderLayer(E, H, F, dropout=0, activation="gelu",
    batch_first=True, norm_first=True), CausalEncoderLayer when causal (its tensors: _BLOCK_TENSORS; saving also takes
    an nn.TransformerEncoder of such layers, as its layers and then its norm),
    attention:H[:causal][:rotary] on (T, E) -> SelfAttention(E, H, causal, rotary), an nn.MultiheadAttention(E, H,
    batch_first=True) called as mha(x, x, x) (with the upper-triangular attn_mask when causal): its state_dict is
    nn.MultiheadAttention's own (in_proj_weight [3E][E], in_proj_bias, out_proj.weight, out_proj.bias), so a file loads
    into a plain nn.MultiheadAttention too (which computes the layer without :rotary); saving needs the SelfAttention
    wrapper (a bare nn.MultiheadAttention takes three inputs and is refused). With rotary, SelfAttention rotates each
    head's q and k by their position (rotate_half pairs (i, i + d/2), angle t base^(-2i/d)) as PetNet's attention does,
    convtranspose2d:OUT[:K[:STRIDE[:PAD]]][:output_padding=P][:dilation=D][:groups=G][:bias=0] -> ConvTranspose2d
    (weight [Cin][OUT/G][KH][KW], PetNet's own order [Cin][KH][KW][OUT/G] in files of version 2),
    upsample:S[:MODE] -> Upsample(scale_factor=S, mode='nearest', or 'bilinear' on (h, w, c) and 'trilinear' on
    (d, h, w, c) for MODE linear, align_corners=False); S an integer or one per spatial dim (2x3). Saving accepts
    nn.Upsample and nn.UpsamplingNearest2d with integer factors (not size=, not align_corners=True).
PyTorch's Softplus returns x itself above x = 20, where PetNet keeps log(1 + e^x) (a relative difference below 1e-9
there). Dropout masks are drawn differently: compare training-mode passes only without dropout.
Needs PyTorch and h5py (Debian: apt-get install python3-torch python3-h5py).
"""
import argparse
import math
import struct
import sys
import zlib

try:
    import h5py
    import numpy as np
    import torch
    import torch.fx
except ImportError as e:  # the test suite must fail, not skip, when these are missing
    sys.exit(f"petnet_torch.py: {e}: install PyTorch and h5py (Debian: apt-get install python3-torch python3-h5py)")

FORMAT_VERSION = 4  # written; versions 1 to 4 are read (4 is 3 with header_crc32)
GROUP = "petnet"
nn = torch.nn

ACTIVATIONS = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "gelu": lambda: nn.GELU(approximate="none"),
    "softplus": nn.Softplus,
    "identity": nn.Identity,
}


# ---------------------------------------------------------------------------------------------- modules PetNet adds
class Residual(nn.Module):
    """PetNet's residual(F) (y = x + F(x)) and residual(F|P) (y = P(x) + F(x)); state_dict keys res.<j>.*, shortcut.<j>.*"""

    def __init__(self, res, shortcut=None):
        super().__init__()
        self.res = res if isinstance(res, nn.Sequential) else nn.Sequential(*res)
        if shortcut is not None and not isinstance(shortcut, nn.Sequential):
            shortcut = nn.Sequential(*shortcut)
        self.shortcut = shortcut

    def forward(self, x):
        return self.res(x) + (x if self.shortcut is None else self.shortcut(x))


class GlobalAvgPool(nn.Module):
    """PetNet's globalavgpool: [n][c][h][w] or [n][c][d][h][w] -> [n][c], the mean over positions
    (AdaptiveAvgPool2d(1) or AdaptiveAvgPool3d(1), then Flatten)."""

    def forward(self, x):
        return x.mean(dim=tuple(range(2, x.dim())))


GlobalAvgPool2d = GlobalAvgPool  # its name before volumes


class TokenEmbedding(nn.Embedding):
    """PetNet's embedding:V:E: nn.Embedding on token ids that arrive as floating-point values (PetNet's inputs are
    Vecs), rounded to integers first."""

    def forward(self, x):
        return super().forward(torch.round(x).long())


def rotary_tables(T, d, base=10000.0, dtype=torch.float64, device=None):
    """cos and sin (T, d/2) of the rotary angles t base^(-2i/d), t < T, i < d/2 (computed in float64)"""
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)
    angle = torch.arange(T, dtype=torch.float64, device=device)[:, None] * freq[None, :]
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)


def rotate_half(x, cos, sin):
    """Rotary positions on (..., T, d): the pairs (i, i + d/2) of the last dimension turned by the angles of cos, sin
    (T, d/2), as PetNet's attention:H:rotary (src/layers/impls/attention/attentionrotary.h)"""
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


class SelfAttention(nn.MultiheadAttention):
    """PetNet's attention:H[:causal][:rotary]: nn.MultiheadAttention(E, H, batch_first=True) as self-attention on
    (N, T, E), mha(x, x, x, attn_mask) with the mask True above the diagonal when causal; returns the attended output
    only. rotary=True: the same parameters, with each head's q and k rotated by their position after the projection
    (rotate_half, base rotary_base) -- computed here from in_proj and out_proj, as nn.MultiheadAttention has no hook."""

    def __init__(self, embed_dim, num_heads, causal=False, dropout=0.0, dtype=None, rotary=False, rotary_base=10000.0):
        super().__init__(embed_dim, num_heads, dropout=dropout, batch_first=True, dtype=dtype)
        self.causal = causal
        self.rotary = rotary
        self.rotary_base = rotary_base
        if rotary and (embed_dim // num_heads) % 2:
            raise ValueError(f"SelfAttention({embed_dim}, {num_heads}, rotary=True): rotary positions need an even head width E / H, not {embed_dim // num_heads}")

    def forward(self, x):
        N, T, E = x.shape
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), 1) if self.causal else None
        if not self.rotary:
            return super().forward(x, x, x, attn_mask=mask, need_weights=False)[0]
        H = self.num_heads
        d = E // H
        q, k, v = (t.reshape(N, T, H, d).transpose(1, 2) for t in nn.functional.linear(x, self.in_proj_weight, self.in_proj_bias).chunk(3, dim=-1))
        cos, sin = rotary_tables(T, d, self.rotary_base, x.dtype, x.device)
        q, k = rotate_half(q, cos, sin), rotate_half(k, cos, sin)
        s = q @ k.transpose(-1, -2) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        p = nn.functional.dropout(torch.softmax(s, dim=-1), self.dropout, self.training)
        return self.out_proj((p @ v).transpose(1, 2).reshape(N, T, E))


# The tensors of PetNet's pre-norm block transformer:H:F[:causal] in a model file, relative to its entry I (NetSetLayers()
# names the block's nodes I.attn.res.<j> and I.mlp.res.<j>, src/net/netspec.c), beside the same tensors in
# nn.TransformerEncoderLayer(norm_first=True) and in a nanoGPT block (share/bench/charlm_torch.py's Block):
#     file (I.)                    nn.TransformerEncoderLayer       nanoGPT (transformer.h.N.)   shape
_BLOCK_TENSORS = (
    ("attn.res.0.weight", "norm1.weight", "ln_1.weight", "E"),
    ("attn.res.0.bias", "norm1.bias", "ln_1.bias", "E"),
    ("attn.res.1.in_proj_weight", "self_attn.in_proj_weight", "attn.in_proj_weight", "3E,E"),  # rows q, k, v
    ("attn.res.1.in_proj_bias", "self_attn.in_proj_bias", "attn.in_proj_bias", "3E"),
    ("attn.res.1.out_proj.weight", "self_attn.out_proj.weight", "attn.out_proj.weight", "E,E"),
    ("attn.res.1.out_proj.bias", "self_attn.out_proj.bias", "attn.out_proj.bias", "E"),
    ("mlp.res.0.weight", "norm2.weight", "ln_2.weight", "E"),
    ("mlp.res.0.bias", "norm2.bias", "ln_2.bias", "E"),
    ("mlp.res.1.weight", "linear1.weight", "mlp.c_fc.weight", "F,E"),
    ("mlp.res.1.bias", "linear1.bias", "mlp.c_fc.bias", "F"),
    ("mlp.res.3.weight", "linear2.weight", "mlp.c_proj.weight", "E,F"),
    ("mlp.res.3.bias", "linear2.bias", "mlp.c_proj.bias", "E"),
)


def _block_shape(text, E, F):
    """'3E,E' -> (3 E, E) for a block of width E and MLP width F"""
    return tuple(int(d[:-1] or 1) * {"E": E, "F": F}[d[-1]] for d in text.split(","))


class CausalEncoderLayer(nn.TransformerEncoderLayer):
    """PetNet's transformer:H:F:causal: nn.TransformerEncoderLayer(E, H, F, dropout=0, activation="gelu",
    batch_first=True, norm_first=True) called with the causal mask (True above the diagonal) on its one input."""

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        if src_mask is not None or src_key_padding_mask is not None:
            raise ValueError("CausalEncoderLayer makes its own causal mask: call it (or its nn.TransformerEncoder) without src_mask and src_key_padding_mask")
        T = src.shape[1]
        return super().forward(src, src_mask=torch.triu(torch.ones(T, T, dtype=torch.bool, device=src.device), 1))


def encoder_layer(E, H, F, causal=False, dtype=torch.float64):
    """The PyTorch module of PetNet's transformer:H:F[:causal] on (T, E) samples: nn.TransformerEncoderLayer(E, H, F,
    dropout=0, activation="gelu", batch_first=True, norm_first=True), or CausalEncoderLayer when causal."""
    return (CausalEncoderLayer if causal else nn.TransformerEncoderLayer)(E, H, F, dropout=0.0, activation="gelu", batch_first=True, norm_first=True, dtype=dtype)


def _encoder_entry(m):
    """transformer:H:F[:causal] of an nn.TransformerEncoderLayer, refused (ValueError saying what to write) unless it is
    PetNet's block: pre-norm, batch_first, exact GELU, no dropout, LayerNorm eps 1e-5 with affine parameters, biases."""
    a = m.self_attn
    gelu = m.activation is torch.nn.functional.gelu or (isinstance(m.activation, nn.GELU) and m.activation.approximate == "none")
    fix = []
    if not m.norm_first:
        fix.append("norm_first=True (PetNet's block is pre-norm)")
    if not a.batch_first:
        fix.append("batch_first=True")
    if not gelu:
        fix.append('activation="gelu" (the exact, erf form)')
    if any(d.p != 0 for d in (m.dropout, m.dropout1, m.dropout2)) or a.dropout != 0:
        fix.append("dropout=0.0 (PetNet's block has no dropout; a trained model's evaluation-mode outputs do not depend on it)")
    if any(n.eps != 1e-5 or not n.elementwise_affine for n in (m.norm1, m.norm2)):
        fix.append("layer_norm_eps=1e-5 with the LayerNorms' affine parameters")
    if a.in_proj_weight is None or a.in_proj_bias is None or a.bias_k is not None or a.add_zero_attn or m.linear1.bias is None or m.linear2.bias is None:
        fix.append("the projections with biases (no kdim/vdim, add_bias_kv or add_zero_attn)")
    if fix:
        raise ValueError(f"this nn.TransformerEncoderLayer is not PetNet's transformer:H:F block: construct it with {', '.join(fix)}")
    return f"transformer:{a.num_heads}:{m.linear1.out_features}" + (":causal" if isinstance(m, CausalEncoderLayer) else "")


def _attention_args(args):
    """attention's H[:causal][:rotary] (the flags in either order) -> (H, causal, rotary)"""
    head, _, rest = (args or "").partition(":")
    flags = rest.split(":") if rest else []
    if not head.isdigit() or int(head) <= 0 or any(f not in ("causal", "rotary") for f in flags) or len(set(flags)) != len(flags):
        raise ValueError(f"attention takes H[:causal][:rotary], the number of heads and optionally causal and rotary, not '{args}'")
    return int(head), "causal" in flags, "rotary" in flags


def _norm_args(kind, args):
    """layernorm's [noaffine][:eps=EPS] -> (affine, eps)"""
    affine, eps = True, 1e-5
    for f in (args.split(":") if args else []):
        if f in ("noaffine", "affine"):
            affine = f == "affine"
        elif f.startswith("eps="):
            eps = float(f[4:])
        else:
            raise ValueError(f"{kind} takes noaffine and eps=EPS, not '{args}'")
    return affine, eps


class FlattenLinear(nn.Linear):
    """PetNet's dense layer on an (h, w, c) or (d, h, w, c) input: nn.Linear on the NCHW (NCDHW) input flattened in
    PyTorch's (c, h, w) ((c, d, h, w)) order; on (T, E) tokens, (N, T, E) flattened in PetNet's own order."""

    def forward(self, x):
        return nn.functional.linear(x.flatten(1), self.weight, self.bias)


class TokenLinear(nn.Linear):
    """PetNet's dense:N:tokens: nn.Linear itself, on the last dimension at each position of (N, T, E) data; its own
    class only so that the spec text says tokens (a plain nn.Linear on (T, E) data would be ambiguous)."""


# ---------------------------------------------------------------------------------------------- spec text
def parse_shape(text):
    """'784' or '28x28x1' (PetNetShapeToString) -> (784,) or (28, 28, 1)."""
    return tuple(int(d) for d in text.replace(",", "x").split("x"))


def shape_to_string(shape):
    return "x".join(str(d) for d in shape)


def _matching(text, start):
    """Index of the parenthesis closing the one at text[start], or -1."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def _split_top(text, sep):
    """Splits at the separators outside parentheses, as NetSetLayers() does."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _split_entry(entry):
    """'kind', 'kind:args', 'kind:(args)' or 'kind(args)' -> (kind in lower case, args or '')."""
    entry = entry.strip()
    k = min([i for i in (entry.find(":"), entry.find("(")) if i >= 0], default=len(entry))
    kind, rest = entry[:k].strip().lower(), entry[k:]
    if rest.startswith(":"):
        rest = rest[1:].strip()
        if rest.startswith("(") and _matching(rest, 0) == len(rest) - 1:
            rest = rest[1:-1]
    elif rest.startswith("("):
        if _matching(rest, 0) != len(rest) - 1:
            raise ValueError(f"malformed layer '{entry}': text follows the closing parenthesis")
        rest = rest[1:-1]
    return kind, rest.strip()


def _tuple(text, n=2):
    """'3', '3x5' or '2x3x3' -> n values: (3,) * n, or the n values given (one per spatial dim)"""
    a = text.replace(",", "x").split("x")
    if len(a) not in (1, n):
        raise ValueError(f"'{text}' is not an integer or {'a pair such as 3x5' if n == 2 else 'a triple such as 3x3x5'}")
    return tuple(int(v) for v in (a * n if len(a) == 1 else a))


def _pair(text):
    """'3' or '3x5' -> (3, 3) or (3, 5)"""
    return _tuple(text, 2)


def _pair_text(p):
    """as LayerWindowToString: '3' when all values are equal, else '3x5' or '2x3x3'"""
    return str(p[0]) if all(v == p[0] for v in p) else "x".join(str(v) for v in p)


def _as_tuple(v, n=2):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _as_pair(v):
    return _as_tuple(v, 2)


def _real_text(v):
    """%g when it reads back exactly, else all the digits (batchnorm and dropout arguments in C)"""
    text = "%g" % v
    return text if float(text) == v else "%.17g" % v


def _conv_args(args, nsd=2):
    """conv2d (nsd 2) or conv3d (nsd 3) arguments OUT[:K[:STRIDE[:PAD[:D[:G]]]]] and the named settings
    -> dict(out, k, s, p, d, groups, bias), k, s, p, d with nsd values"""
    kind = f"conv{nsd}d"
    c = dict(k=(3,) * nsd, s=(1,) * nsd, p=(0,) * nsd, d=(1,) * nsd, groups=1, bias=True)
    positional = []
    for field in args.split(":") if args else []:
        if "=" in field:
            key, value = field.split("=", 1)
            if key == "dilation":
                c["d"] = _tuple(value, nsd)
            elif key == "groups":
                c["groups"] = int(value)
            elif key == "bias":
                c["bias"] = int(value) != 0
            else:
                raise ValueError(f"{kind}: unknown setting '{key}' in '{args}'")
        else:
            positional.append(field)
    if not positional or len(positional) > 6:
        raise ValueError(f"{kind} takes OUT[:K[:STRIDE[:PAD[:D[:G]]]]] and named settings, not '{args}'")
    c["out"] = int(positional[0])
    for key, value in zip(("k", "s", "p", "d"), positional[1:5]):
        c[key] = _tuple(value, nsd)
    if len(positional) > 5:
        c["groups"] = int(positional[5])
    return c


def _convt_args(args):
    """convtranspose2d arguments -> dict(out, k, s, p, op, d, groups, bias)"""
    fields = args.split(":") if args else []
    op = [_pair(f.split("=", 1)[1]) for f in fields if f.startswith("output_padding=")]
    c = _conv_args(":".join(f for f in fields if not f.startswith("output_padding=")))
    c["op"] = op[-1] if op else (0, 0)
    return c


def _pool_args(args, nsd=2, dilation=False):
    """pooling arguments K[:STRIDE[:PAD]] (maxpool: K[:STRIDE[:PAD[:DILATION]]]) on nsd spatial dims -> (k, s, p, d);
    stride defaults to the kernel, dilation to 1"""
    fields = args.split(":") if args else ["2"]
    if len(fields) > (4 if dilation else 3):
        raise ValueError(f"pooling takes K[:STRIDE[:PAD{':DILATION' if dilation else ''}]], not '{args}'")
    k = _tuple(fields[0], nsd)
    s = _tuple(fields[1], nsd) if len(fields) > 1 else k
    s = tuple(si if si else ki for si, ki in zip(s, k))  # stride 0 means the kernel
    p = _tuple(fields[2], nsd) if len(fields) > 2 else (0,) * nsd
    d = _tuple(fields[3], nsd) if len(fields) > 3 else (1,) * nsd
    return k, s, p, d


def _upsample_args(args):
    """upsample arguments S[:MODE] -> ([factors], linear); S as 2 or 2x3 (integers), MODE nearest or linear"""
    fields = args.split(":") if args else ["2"]
    if len(fields) > 2 or (len(fields) == 2 and fields[1] not in ("nearest", "linear")):
        raise ValueError(f"upsample takes S[:MODE] with MODE nearest or linear, not '{args}'")
    factors = [int(f) for f in fields[0].split("x")]
    if not 1 <= len(factors) <= 3 or min(factors) < 1:
        raise ValueError(f"upsample: the factors are 1 to 3 positive integers, not '{fields[0]}'")
    return factors, len(fields) == 2 and fields[1] == "linear"


# ---------------------------------------------------------------------------------------------- PetNet spec -> modules
def _chw_order(shape):
    """For the flat features of an (h, w, c) or (d, h, w, c) sample in PyTorch's (c, h, w) or (c, d, h, w) order: the
    PetNet (channels-last) index of each (None when the two orders agree)."""
    *spatial, c = shape
    if c == 1 or math.prod(spatial) == 1:
        return None
    nsd = len(spatial)
    return np.arange(math.prod(shape)).reshape(shape).transpose(nsd, *range(nsd)).reshape(-1)


def _spatial(shape):
    """Is it an image or a volume, (h, w, c) or (d, h, w, c)?"""
    return len(shape) in (3, 4)


def _make_module(kind, args, shape):
    """The PyTorch module of one PetNet layer whose input has the (PetNet) shape."""
    features = math.prod(shape)
    if args and "partition=" in args and not any(c in args for c in ",|("):  # how the weights are split over ranks: the same function
        args = ":".join(f for f in args.split(":") if not f.startswith("partition="))
    if kind == "dense":
        words = args.split(":")
        args, bias, tokens = words[0], True, False
        for w in words[1:]:
            if w in ("bias=0", "bias=1"):
                bias = w == "bias=1"
            elif w == "tokens":
                tokens = True
            else:
                raise ValueError(f"dense takes bias=0, bias=1 and tokens after its number of outputs, not '{w}'")
        if not args.isdigit() or int(args) <= 0:
            raise ValueError(f"dense takes its number of outputs (dense:N[:bias=0][:tokens]), not '{args}'")
        if tokens:
            if len(shape) > 2:
                raise ValueError(f"dense:{args}:tokens on a {shape_to_string(shape)} input: PyTorch holds it NCHW, so nn.Linear's last dimension is not PetNet's; give (T, E) or (E) samples")
            return TokenLinear(shape[-1], int(args), bias=bias, dtype=torch.float64)
        return (FlattenLinear if len(shape) >= 2 else nn.Linear)(features, int(args), bias=bias, dtype=torch.float64)
    if kind in ("conv2d", "conv3d"):
        nsd = 2 if kind == "conv2d" else 3
        c = _conv_args(args, nsd)
        if len(shape) != nsd + 1:
            raise ValueError(f"{kind}:{args} needs an {'(h, w, c)' if nsd == 2 else '(d, h, w, c)'} input, not {shape_to_string(shape)}")
        module = nn.Conv2d if nsd == 2 else nn.Conv3d
        return module(shape[-1], c["out"], c["k"], stride=c["s"], padding=c["p"], dilation=c["d"], groups=c["groups"], bias=c["bias"], dtype=torch.float64)
    if kind == "convtranspose2d":
        c = _convt_args(args)
        if len(shape) != 3:
            raise ValueError(f"convtranspose2d:{args} needs an (h, w, c) input, not {shape_to_string(shape)}")
        return nn.ConvTranspose2d(shape[2], c["out"], c["k"], stride=c["s"], padding=c["p"], output_padding=c["op"], groups=c["groups"], bias=c["bias"], dilation=c["d"], dtype=torch.float64)
    if kind in ("maxpool", "avgpool"):
        if not _spatial(shape):
            raise ValueError(f"{kind}:{args} needs an (h, w, c) or (d, h, w, c) input, not {shape_to_string(shape)}")
        nsd = len(shape) - 1
        k, s, p, d = _pool_args(args, nsd, kind == "maxpool")
        if kind == "maxpool":
            return (nn.MaxPool2d if nsd == 2 else nn.MaxPool3d)(k, stride=s, padding=p, dilation=d)
        return (nn.AvgPool2d if nsd == 2 else nn.AvgPool3d)(k, stride=s, padding=p, count_include_pad=True)
    if kind == "batchnorm":
        fields = [float(v) for v in args.split(":")] if args else []
        momentum = fields[0] if fields else 0.1
        eps = fields[1] if len(fields) > 1 else 1e-5
        module = {1: nn.BatchNorm1d, 3: nn.BatchNorm2d, 4: nn.BatchNorm3d}.get(len(shape))
        if module is None:
            raise ValueError(f"batchnorm on a {shape_to_string(shape)} input has no PyTorch equivalent here (give (f), (h, w, c) or (d, h, w, c))")
        return module(shape[-1], eps=eps, momentum=momentum, dtype=torch.float64)
    if kind == "dropout":
        return nn.Dropout(float(args))
    if kind == "layernorm":
        if len(shape) not in (1, 2):
            raise ValueError(f"layernorm on a {shape_to_string(shape)} input: PyTorch's NCHW layout puts the channels elsewhere; give (f) or (T, E)")
        affine, eps = _norm_args(kind, args)
        return nn.LayerNorm(shape[-1], eps=eps, elementwise_affine=affine, dtype=torch.float64)
    if kind == "transformer":
        fields = (args or "").split(":")
        if len(fields) not in (2, 3) or not all(f.isdigit() and int(f) > 0 for f in fields[:2]) or fields[2:] not in ([], ["causal"]):
            raise ValueError(f"transformer takes H:F[:causal], the heads and the MLP's hidden units, not '{args}'")
        if len(shape) != 2 or shape[1] % int(fields[0]):
            raise ValueError(f"transformer:{args} needs a (T, E) input with H dividing E, not {shape_to_string(shape)}")
        return encoder_layer(shape[1], int(fields[0]), int(fields[1]), causal=fields[2:] == ["causal"])
    if kind == "attention":
        heads, causal, rotary = _attention_args(args)
        if len(shape) != 2 or shape[1] % heads:
            raise ValueError(f"attention:{args} needs a (T, E) input with H dividing E, not {shape_to_string(shape)}")
        return SelfAttention(shape[1], heads, causal, dtype=torch.float64, rotary=rotary)
    if kind == "embedding":
        fields = args.split(":") if args else []
        if len(fields) != 2 or not all(f.isdigit() and int(f) > 0 for f in fields):
            raise ValueError(f"embedding takes V:E, two positive integers, not '{args}'")
        return TokenEmbedding(int(fields[0]), int(fields[1]), dtype=torch.float64)
    if kind == "upsample":
        factors, linear = _upsample_args(args)
        if len(shape) not in (3, 4) or len(factors) not in (1, len(shape) - 1):
            raise ValueError(f"upsample:{args} on a {shape_to_string(shape)} input: it upsamples (h, w, c) or (d, h, w, c) samples, one factor or one per spatial dim")
        factors = factors * (len(shape) - 1) if len(factors) == 1 else factors
        mode = ("bilinear" if len(shape) == 3 else "trilinear") if linear else "nearest"
        return nn.Upsample(scale_factor=tuple(float(f) for f in factors), mode=mode, align_corners=False if linear else None)
    if kind == "globalavgpool" and not args:
        return GlobalAvgPool()
    if kind == "flatten" and not args:
        return nn.Flatten()
    if kind == "leakyrelu":
        return nn.LeakyReLU(float(args) if args else 0.01)
    if kind in ACTIVATIONS and not args:
        return ACTIVATIONS[kind]()
    if kind == "residual":
        inner = args.strip()
        if inner.startswith("(") and _matching(inner, 0) == len(inner) - 1:  # residual:((F|P)) as residual:(F|P)
            inner = inner[1:-1]
        branches = _split_top(inner, "|")
        if len(branches) > 2 or not all(b.strip() for b in branches):
            raise ValueError(f"residual({args}): write residual(F) or residual(F|P) with F and P layer lists")
        seqs = [_build(b, shape) for b in branches]
        return Residual(seqs[0], seqs[1] if len(seqs) > 1 else None)
    raise ValueError(f"layer '{kind}{':' + args if args else ''}' has no PyTorch equivalent here: add it to petnet_torch.py")


def _build(spec, input_shape):
    state = _State(tuple(input_shape))
    modules = []
    for entry in _split_top(spec, ","):
        if not entry.strip():
            raise ValueError(f"'{spec}' has an empty entry")
        kind, args = _split_entry(entry)
        module = _make_module(kind, args, state.shape)
        modules.append(module)
        state, _ = _bind(_group_one(module), state)
    return nn.Sequential(*modules)


def build_sequential(spec, input_shape):
    """The nn.Sequential (float64) equivalent to a PetNet layer list on samples of input_shape (one module a layer)."""
    model = _build(spec, input_shape)
    model.petnet_input_shape = tuple(input_shape)
    return model


# ---------------------------------------------------------------------------------------------- modules -> PetNet layers
_FUNCTIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


class _Tracer(torch.fx.Tracer if hasattr(torch, "fx") else object):
    """torch.fx's tracer, with the modules this script adds as leaves (it would trace into Residual's addition)."""

    def is_leaf_module(self, m, qualname):
        return isinstance(m, (Residual, GlobalAvgPool, FlattenLinear, TokenLinear, CausalEncoderLayer)) or super().is_leaf_module(m, qualname)


def _chain(model):
    """[(state_dict prefix of the module or None, module)] in the order model's forward calls them: the modules of an
    nn.Sequential, or of any nn.Module whose forward torch.fx traces into a chain of the supported modules;
    torch.flatten(x, 1) / x.flatten(1) and the functional relu, tanh, sigmoid become modules."""
    if isinstance(model, (list, tuple)):
        return [(None, m) for m in model]
    if isinstance(model, nn.Sequential):
        return [(str(i), m) for i, m in enumerate(model)]
    try:
        graph = _Tracer().trace(model)
    except Exception as e:
        raise ValueError(f"{type(model).__name__}: torch.fx cannot trace its forward ({e}): write the model as an nn.Sequential") from e
    modules, chain, prev = dict(model.named_modules()), [], None
    for node in graph.nodes:
        if node.op == "placeholder":
            if prev is not None:
                raise ValueError(f"{type(model).__name__}.forward takes more than one input: PetNet's layer lists take one")
            prev = node
            continue
        if node.op == "output":
            if node.args[0] is not prev:
                raise ValueError(f"{type(model).__name__}.forward does not return the end of its chain of layers")
            break
        inputs = [a for a in list(node.args) + list(node.kwargs.values()) if isinstance(a, torch.fx.Node)]
        name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
        if inputs != [prev]:
            raise ValueError(f"{type(model).__name__}.forward is not a chain of layers at '{name}' (several inputs, or a skip connection): "
                             "write skip connections with petnet_torch.Residual")
        extra = list(node.args[1:]) + list(node.kwargs.values())
        if node.op == "call_module":
            chain.append((node.target, modules[node.target]))
        elif name == "flatten" and extra in ([1], [1, -1]):
            chain.append((None, nn.Flatten()))
        elif name in _FUNCTIONS and not extra:
            chain.append((None, _FUNCTIONS[name]()))
        else:
            raise ValueError(f"{type(model).__name__}.forward calls '{name}', which is not a supported module: use the modules "
                             "PetNet has (see petnet_torch.py's help), torch.flatten(x, 1), relu, tanh or sigmoid")
        prev = node
    return chain


def _group(modules):
    """PetNet layers of a sequence of modules (an nn.Sequential, a list, or an nn.Module whose forward is a chain):
    [(entry, [modules])]; AdaptiveAvgPool2d(1) (or 3d) + Flatten is one globalavgpool."""
    modules, layers, i = [m for _, m in _chain(modules)], [], 0
    while i < len(modules):
        m = modules[i]
        if isinstance(m, (nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)):
            name, nsd = type(m).__name__, 2 if isinstance(m, nn.AdaptiveAvgPool2d) else 3
            if _as_tuple(m.output_size, nsd) != (1,) * nsd or i + 1 >= len(modules) or not isinstance(modules[i + 1], nn.Flatten):
                raise ValueError(f"{name} is PetNet's globalavgpool only as {name}(1) followed by Flatten()")
            layers.append(("globalavgpool", [m, modules[i + 1]]))
            i += 2
            continue
        if isinstance(m, nn.TransformerEncoder):  # its layers, then its norm: transformer:H:F entries and a layernorm
            layers += [_group_one(layer) for layer in m.layers] + ([_group_one(m.norm)] if m.norm is not None else [])
        else:
            layers.append(_group_one(m))
        i += 1
    return layers


def _group_one(m):
    """(entry, [m]): PetNet's spec entry of one module, in the form NetGetSpec() writes."""
    if isinstance(m, nn.Linear):
        return f"dense:{m.out_features}" + ("" if m.bias is not None else ":bias=0") + (":tokens" if isinstance(m, TokenLinear) else ""), [m]
    if isinstance(m, (nn.Conv2d, nn.Conv3d)):
        nsd = 2 if isinstance(m, nn.Conv2d) else 3
        kind = f"conv{nsd}d"
        if m.padding_mode != "zeros":
            raise ValueError(f"PetNet's {kind} pads with zeros, not padding_mode='{m.padding_mode}'")
        pad = _conv_padding(m)
        text = f"{kind}:{m.out_channels}:{_pair_text(_as_tuple(m.kernel_size, nsd))}:{_pair_text(_as_tuple(m.stride, nsd))}:{_pair_text(pad)}"
        if _as_tuple(m.dilation, nsd) != (1,) * nsd:
            text += f":dilation={_pair_text(_as_tuple(m.dilation, nsd))}"
        if m.groups != 1:
            text += f":groups={m.groups}"
        if m.bias is None:
            text += ":bias=0"
        return text, [m]
    if isinstance(m, nn.ConvTranspose2d):
        if m.padding_mode != "zeros":
            raise ValueError(f"PetNet's convtranspose2d pads with zeros, not padding_mode='{m.padding_mode}'")
        text = f"convtranspose2d:{m.out_channels}:{_pair_text(m.kernel_size)}:{_pair_text(m.stride)}:{_pair_text(_as_pair(m.padding))}"
        if _as_pair(m.output_padding) != (0, 0):
            text += f":output_padding={_pair_text(_as_pair(m.output_padding))}"
        if _as_pair(m.dilation) != (1, 1):
            text += f":dilation={_pair_text(m.dilation)}"
        if m.groups != 1:
            text += f":groups={m.groups}"
        if m.bias is None:
            text += ":bias=0"
        return text, [m]
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d, nn.MaxPool3d, nn.AvgPool3d)):
        kind = "maxpool" if isinstance(m, (nn.MaxPool2d, nn.MaxPool3d)) else "avgpool"
        nsd = 2 if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)) else 3
        if m.ceil_mode:
            raise ValueError(f"PetNet's {kind} rounds the output size down: use ceil_mode=False")
        if kind == "maxpool" and m.return_indices:
            raise ValueError("PetNet's maxpool returns no indices")
        if kind == "avgpool" and (not m.count_include_pad or m.divisor_override is not None):
            raise ValueError("PetNet's avgpool counts padded taps (divisor the window's size): use count_include_pad=True, no divisor_override")
        k = _as_tuple(m.kernel_size, nsd)
        s, p = _as_tuple(m.stride if m.stride is not None else m.kernel_size, nsd), _as_tuple(m.padding, nsd)
        d = _as_tuple(m.dilation, nsd) if kind == "maxpool" else (1,) * nsd
        if d != (1,) * nsd:
            return f"{kind}:{_pair_text(k)}:{_pair_text(s)}:{_pair_text(p)}:{_pair_text(d)}", [m]
        if p != (0,) * nsd:
            return f"{kind}:{_pair_text(k)}:{_pair_text(s)}:{_pair_text(p)}", [m]
        if s != k:
            return f"{kind}:{_pair_text(k)}:{_pair_text(s)}", [m]
        return f"{kind}:{_pair_text(k)}", [m]
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
        if not m.affine or not m.track_running_stats or m.momentum is None:
            raise ValueError("PetNet's batchnorm has weight, bias and running statistics with a momentum: use affine=True, track_running_stats=True, momentum not None")
        if m.momentum == 0.1 and m.eps == 1e-5:
            return "batchnorm", [m]
        return f"batchnorm:{_real_text(m.momentum)}:{_real_text(m.eps)}", [m]
    if isinstance(m, nn.Dropout):
        return f"dropout:{_real_text(m.p)}", [m]
    if isinstance(m, nn.LayerNorm):
        if len(m.normalized_shape) != 1:
            raise ValueError("PetNet's layernorm normalises the last dimension only: use LayerNorm(E)")
        fields = ([] if m.elementwise_affine else ["noaffine"]) + ([] if m.eps == 1e-5 else [f"eps={_real_text(m.eps)}"])
        return ":".join(["layernorm"] + fields), [m]
    if isinstance(m, nn.TransformerEncoderLayer):
        return _encoder_entry(m), [m]
    if isinstance(m, SelfAttention):
        if m.in_proj_weight is None or m.in_proj_bias is None or m.bias_k is not None or m.add_zero_attn or not m.batch_first:
            raise ValueError("PetNet's attention has in_proj_weight, in_proj_bias and the output projection: use SelfAttention(E, H) (bias=True, no add_bias_kv, no add_zero_attn, kdim = vdim = E)")
        return f"attention:{m.num_heads}{':causal' if m.causal else ''}{':rotary' if getattr(m, 'rotary', False) else ''}", [m]
    if isinstance(m, nn.MultiheadAttention):
        raise ValueError("nn.MultiheadAttention takes query, key and value: wrap it as petnet_torch.SelfAttention(E, H[, causal]) (self-attention, batch_first) to save it for PetNet's attention:H[:causal]")
    if isinstance(m, nn.Embedding):
        if m.padding_idx is not None or m.max_norm is not None:
            raise ValueError("PetNet's embedding is a plain table: use Embedding(V, E) without padding_idx or max_norm")
        return f"embedding:{m.num_embeddings}:{m.embedding_dim}", [m]
    if isinstance(m, nn.Upsample):
        return _upsample_entry(m), [m]
    if isinstance(m, GlobalAvgPool):
        return "globalavgpool", [m]
    if isinstance(m, nn.Flatten):
        if m.start_dim != 1 or m.end_dim != -1:
            raise ValueError("PetNet's flatten keeps the batch dimension only: use Flatten(1, -1)")
        return "flatten", [m]
    if isinstance(m, nn.LeakyReLU):
        return "leakyrelu:%.17g" % m.negative_slope, [m]
    if isinstance(m, nn.GELU):
        if m.approximate != "none":
            raise ValueError("PetNet's gelu is the exact (erf) form: use GELU(approximate='none')")
        return "gelu", [m]
    if isinstance(m, nn.Softplus):
        if m.beta != 1:
            raise ValueError("PetNet's softplus has beta = 1")
        return "softplus", [m]
    names = {nn.ReLU: "relu", nn.Tanh: "tanh", nn.Sigmoid: "sigmoid", nn.Identity: "identity"}
    if type(m) in names:
        return names[type(m)], [m]
    if isinstance(m, Residual):
        f = ",".join(e for e, _ in _group(m.res))
        p = "|" + ",".join(e for e, _ in _group(m.shortcut)) if m.shortcut is not None else ""
        return f"residual:({f}{p})", [m]
    raise ValueError(f"module {m} has no PetNet layer kind")


def _upsample_entry(m):
    """upsample:S[:linear] of an nn.Upsample with integer scale factors, as NetGetSpec() writes it"""
    if m.size is not None or m.scale_factor is None:
        raise ValueError("PetNet's upsample scales by integer factors: give nn.Upsample a scale_factor, not a size")
    scale = m.scale_factor if isinstance(m.scale_factor, (tuple, list)) else (m.scale_factor,)
    if any(float(f) != int(f) or f < 1 for f in scale):
        raise ValueError(f"PetNet's upsample scales by integer factors, not {m.scale_factor}")
    if m.mode not in ("nearest", "bilinear", "trilinear"):
        raise ValueError(f"PetNet's upsample is nearest or linear (bilinear, trilinear), not mode='{m.mode}'")
    if m.mode != "nearest" and m.align_corners:
        raise ValueError("PetNet's linear upsample has half-pixel centres: use align_corners=False")
    factors = [int(f) for f in scale]
    text = str(factors[0]) if all(f == factors[0] for f in factors) else "x".join(str(f) for f in factors)
    return f"upsample:{text}" + (":linear" if m.mode != "nearest" else "")


def _conv_padding(m):
    nsd = 2 if isinstance(m, nn.Conv2d) else 3
    if not isinstance(m.padding, str):
        return _as_tuple(m.padding, nsd)
    if m.padding == "valid":
        return (0,) * nsd
    total = [d * (k - 1) for d, k in zip(_as_tuple(m.dilation, nsd), _as_tuple(m.kernel_size, nsd))]  # padding='same'
    if any(t % 2 for t in total):
        raise ValueError(f"{type(m).__name__}(padding='same') pads unevenly with this kernel: PetNet pads both sides equally, give an explicit padding")
    return tuple(t // 2 for t in total)


def spec_from_sequential(model):
    """PetNet's compact layer list for an nn.Sequential of the supported modules, as NetGetSpec() writes it."""
    return ",".join(entry for entry, _ in _group(model))


# ---------------------------------------------------------------------------------------------- shapes and tensors
class _State:
    """What flows between layers: the PetNet shape of a sample, and for flat data the PetNet index of each PyTorch
    feature (None when both orders agree)."""

    def __init__(self, shape, order=None):
        self.shape, self.order = tuple(shape), order

    def same_layout(self, other):
        if self.shape != other.shape:
            return False
        if self.order is None or other.order is None:
            return self.order is None and other.order is None
        return np.array_equal(self.order, other.order)


class _Tensor:
    """One tensor of the file: its PyTorch tensor, whether it is a buffer (counter: an integer, num_batches_tracked, in
    files of version 3 only), and the maps to and from the layout of files of versions 1 and 2."""

    def __init__(self, name, tensor, buffer=False, pack=None, unpack=None, counter=False):
        self.name, self.tensor, self.buffer, self.counter = name, tensor, buffer, counter
        self.pack = pack or (lambda t: t.reshape(-1))  # torch tensor -> flat, PetNet's layout
        self.unpack = unpack or (lambda a, shape=tuple(tensor.shape): a.reshape(shape))  # flat -> torch tensor


def _features_tensor(name, t, order, buffer=False):
    """A tensor indexed by the features of flat data in the state's order (batchnorm on flattened data)."""
    if order is None:
        return _Tensor(name, t, buffer)
    order, inverse = torch.as_tensor(order), torch.as_tensor(np.argsort(order))
    return _Tensor(name, t, buffer, pack=lambda x: x[inverse], unpack=lambda a: a[order])


def _window_out(shape, k, s, p, d, what):
    out = [(n + 2 * pi - di * (ki - 1) - 1) // si + 1 for n, ki, si, pi, di in zip(shape[:-1], k, s, p, d)]
    if min(out) < 1:
        raise ValueError(f"{what}: the window is larger than the padded input {shape_to_string(shape)}")
    return out


def _bind(group, state):
    """One PetNet layer (entry, modules) on input state -> (output state, [_Tensor]) with tensor names relative to it."""
    entry, modules = group
    m = modules[0]
    shape, ndim = state.shape, len(state.shape)
    if isinstance(m, nn.Upsample):
        factors, linear = _upsample_args(entry.partition(":")[2])
        if ndim not in (3, 4) or len(factors) not in (1, ndim - 1):
            raise ValueError(f"{entry} on a {shape_to_string(shape)} input: it upsamples (h, w, c) or (d, h, w, c) samples, one factor or one per spatial dim")
        if linear and m.mode != ("bilinear" if ndim == 3 else "trilinear"):
            raise ValueError(f"{entry}: Upsample(mode='{m.mode}') on a {shape_to_string(shape)} input; linear is mode='{'bilinear' if ndim == 3 else 'trilinear'}' there")
        factors = factors * (ndim - 1) if len(factors) == 1 else factors
        return _State(tuple(n * f for n, f in zip(shape[:-1], factors)) + (shape[-1],)), []
    if entry == "globalavgpool":
        if not _spatial(shape):
            raise ValueError(f"globalavgpool needs an (h, w, c) or (d, h, w, c) input, not {shape_to_string(shape)}")
        return _State((shape[-1],)), []
    if isinstance(m, TokenLinear):  # the last dimension at each position, (T, E) -> (T, N): no permutation
        if ndim > 2 or m.in_features != shape[-1]:
            raise ValueError(f"{entry}: TokenLinear has in_features {m.in_features}, and acts on the last dimension of (T, E) or (E) samples, not {shape_to_string(shape)}")
        return _State(tuple(shape[:-1]) + (m.out_features,)), [_Tensor("weight", m.weight)] + ([_Tensor("bias", m.bias)] if m.bias is not None else [])
    if isinstance(m, nn.Linear):
        features = math.prod(shape)
        if ndim == 2 and m.in_features == shape[-1] and m.in_features != features and not isinstance(m, FlattenLinear):
            raise ValueError(f"{entry}: nn.Linear({m.in_features}, ...) on (T, E) = {shape_to_string(shape)} samples acts at each position: make it a petnet_torch.TokenLinear (PetNet's dense:{m.out_features}:tokens)")
        if m.in_features != features:
            raise ValueError(f"{entry}: Linear has in_features {m.in_features}, its input {shape_to_string(shape)} has {features}")
        if _spatial(shape):
            if not isinstance(m, FlattenLinear):
                raise ValueError(f"{entry}: Linear on NCHW data acts on its last dimension: insert nn.Flatten() before it (or use FlattenLinear)")
            order = _chw_order(shape)
        else:
            order = state.order
        weight = _Tensor("weight", m.weight)
        if order is not None:  # the columns are features: ours in (h, w, c) order, torch's in (c, h, w)
            order, inverse = torch.as_tensor(order), torch.as_tensor(np.argsort(order))
            out = m.out_features
            weight = _Tensor("weight", m.weight, pack=lambda t: t[:, inverse].reshape(-1), unpack=lambda a: a.reshape(out, -1)[:, order])
        return _State((m.out_features,)), [weight] + ([_Tensor("bias", m.bias)] if m.bias is not None else [])
    if isinstance(m, (nn.Conv2d, nn.Conv3d)):
        nsd = 2 if isinstance(m, nn.Conv2d) else 3
        if ndim != nsd + 1 or m.in_channels != shape[-1]:
            raise ValueError(f"{entry}: {type(m).__name__} needs an {'(h, w, c)' if nsd == 2 else '(d, h, w, c)'} input with {m.in_channels} channels, not {shape_to_string(shape)}")
        k, s, d = _as_tuple(m.kernel_size, nsd), _as_tuple(m.stride, nsd), _as_tuple(m.dilation, nsd)
        out = _window_out(shape, k, s, _conv_padding(m), d, entry)
        cg = m.in_channels // m.groups
        co = m.out_channels
        last, first = (0,) + tuple(range(2, nsd + 2)) + (1,), (0, nsd + 1) + tuple(range(1, nsd + 1))  # [co][cg][k...] <-> [co][k...][cg]
        tensors = [_Tensor("weight", m.weight, pack=lambda t: t.permute(*last).reshape(-1), unpack=lambda a: a.reshape(co, *k, cg).permute(*first))]
        if m.bias is not None:
            tensors.append(_Tensor("bias", m.bias))
        return _State(tuple(out) + (co,)), tensors
    if isinstance(m, nn.ConvTranspose2d):
        if ndim != 3 or m.in_channels != shape[2]:
            raise ValueError(f"{entry}: ConvTranspose2d has {m.in_channels} input channels, its input is {shape_to_string(shape)} (h, w, c)")
        k, s, p, op, d = (_as_pair(v) for v in (m.kernel_size, m.stride, m.padding, m.output_padding, m.dilation))
        out = [(n - 1) * si - 2 * pi + di * (ki - 1) + oi + 1 for n, ki, si, pi, oi, di in zip(shape[:2], k, s, p, op, d)]
        if min(out) < 1 or any(oi >= max(si, di) for oi, si, di in zip(op, s, d)):
            raise ValueError(f"{entry} on {shape_to_string(shape)}: no output, or an output_padding not smaller than the stride or the dilation")
        cin, cog = m.in_channels, m.out_channels // m.groups
        tensors = [_Tensor("weight", m.weight, pack=lambda t: t.permute(0, 2, 3, 1).reshape(-1), unpack=lambda a: a.reshape(cin, k[0], k[1], cog).permute(0, 3, 1, 2))]
        if m.bias is not None:
            tensors.append(_Tensor("bias", m.bias))
        return _State((out[0], out[1], m.out_channels)), tensors
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d, nn.MaxPool3d, nn.AvgPool3d)):
        nsd = 2 if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)) else 3
        if ndim != nsd + 1:
            raise ValueError(f"{entry}: {type(m).__name__} needs an {'(h, w, c)' if nsd == 2 else '(d, h, w, c)'} input, not {shape_to_string(shape)}")
        k, s, p, d = _pool_args(entry.partition(":")[2], nsd, isinstance(m, (nn.MaxPool2d, nn.MaxPool3d)))
        if any(2 * pi > ki for pi, ki in zip(p, k)):
            raise ValueError(f"{entry}: padding more than half the kernel")
        out = _window_out(shape, k, s, p, d, entry)
        return _State(tuple(out) + (shape[-1],)), []
    if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
        wants = {nn.BatchNorm1d: 1, nn.BatchNorm2d: 3, nn.BatchNorm3d: 4}[type(m)]
        if ndim != wants or m.num_features != shape[-1]:
            raise ValueError(f"{entry}: {type(m).__name__}({m.num_features}) on a {shape_to_string(shape)} input: PetNet normalises the last dimension, "
                             "BatchNorm3d on (d, h, w, c), BatchNorm2d on (h, w, c) and BatchNorm1d on (f)")
        order = state.order if ndim == 1 else None
        tensors = [_features_tensor("weight", m.weight, order), _features_tensor("bias", m.bias, order),
                   _features_tensor("running_mean", m.running_mean, order, True), _features_tensor("running_var", m.running_var, order, True),
                   _Tensor("num_batches_tracked", m.num_batches_tracked, True, counter=True)]
        return state, tensors
    if isinstance(m, nn.LayerNorm):
        if ndim not in (1, 2) or tuple(m.normalized_shape) != (shape[-1],):
            raise ValueError(f"{entry}: LayerNorm{tuple(m.normalized_shape)} on a {shape_to_string(shape)} input: PetNet normalises the last dimension of (f) or (T, E)")
        order = state.order if ndim == 1 else None
        tensors = [_features_tensor("weight", m.weight, order), _features_tensor("bias", m.bias, order)] if m.elementwise_affine else []
        return state, tensors
    if isinstance(m, nn.TransformerEncoderLayer):
        E, F = m.linear1.in_features, m.linear1.out_features
        if ndim != 2 or shape[1] != E:
            raise ValueError(f"{entry}: nn.TransformerEncoderLayer(d_model={E}) on a {shape_to_string(shape)} input: PetNet's transformer block takes (T, E) with E = {E}")
        params = dict(m.named_parameters())
        return state, [_Tensor(ours, params[theirs]) for ours, theirs, _, _ in _BLOCK_TENSORS]
    if isinstance(m, SelfAttention):
        if ndim != 2 or shape[1] != m.embed_dim:
            raise ValueError(f"{entry}: SelfAttention({m.embed_dim}, {m.num_heads}) on a {shape_to_string(shape)} input: PetNet's attention takes (T, E) with E = {m.embed_dim}")
        return state, [_Tensor("in_proj_weight", m.in_proj_weight), _Tensor("in_proj_bias", m.in_proj_bias), _Tensor("out_proj.weight", m.out_proj.weight), _Tensor("out_proj.bias", m.out_proj.bias)]
    if isinstance(m, nn.Embedding):
        if ndim >= 4:
            raise ValueError(f"{entry} on a {shape_to_string(shape)} input: the ids have at most 3 dimensions")
        return _State(tuple(shape) + (m.embedding_dim,)), [_Tensor("weight", m.weight)]
    if isinstance(m, nn.Flatten):
        if _spatial(shape):
            return _State((math.prod(shape),), _chw_order(shape)), []
        return _State((math.prod(shape),), state.order if ndim == 1 else None), []
    if isinstance(m, Residual):
        tensors, outs = [], []
        for name, seq in (("res", m.res), ("shortcut", m.shortcut)):
            if seq is None:
                outs.append(state)
                continue
            out, inner = _bind_list(seq, state)
            outs.append(out)
            tensors += [_prefixed(f"{name}.{t.name}", t) for t in inner]
        if outs[0].shape != outs[1].shape:
            raise ValueError(f"{entry}: F gives {shape_to_string(outs[0].shape)}, the shortcut {shape_to_string(outs[1].shape)}")
        if not outs[0].same_layout(outs[1]):
            raise ValueError(f"{entry}: F and the shortcut give flat features in different orders in PyTorch's layout (one of them is after a "
                             "flatten of (h, w, c) or (d, h, w, c) data, the other after a dense layer): put a dense layer between the flatten and the block")
        return outs[0], tensors
    return state, []  # elementwise kinds and dropout


def _prefixed(name, t):
    t.name = name
    return t


def _bind_list(modules, state):
    """All layers of a sequence: (output state, [_Tensor] named '<layer>.<name>')"""
    tensors = []
    for i, group in enumerate(_group(modules)):
        state, inner = _bind(group, state)
        tensors += [_prefixed(f"{i}.{t.name}", t) for t in inner]
    return state, tensors


def _plan(model, input_shape):
    if _is_graph(model):
        return _plan_graph(model, input_shape)
    return _bind_list(model, _State(tuple(input_shape)))


# ---------------------------------------------------------------------------------------------- graphs (-net_graph)
_JOINS = ("add", "concat")


class Graph(nn.Module):
    """PetNet's graph model (-net_graph, NetSetGraph()) as a PyTorch module: one submodule per node that has a layer,
    registered under the node's name (so the state_dict keys are the file's, "stem.weight", "blk.res.0.bias"), and a
    forward that walks the nodes in order. An add node is a sum of its inputs (torch's +), a concat node torch.cat
    along dim 1: the channels of NCHW (NCDHW) data, which are PetNet's last dimension, or the features of flat data.
    torch.fx traces it into call_module, add and cat nodes. nodes: [(name, kind, inputs)] with kind "layer", "add" or
    "concat", inputs node names or "input"; modules: {name: module} for the layer nodes."""

    def __init__(self, nodes, modules):
        super().__init__()
        self.petnet_nodes = [(name, kind, tuple(inputs)) for name, kind, inputs in nodes]
        for name, kind, _ in self.petnet_nodes:
            if kind not in _JOINS:
                try:
                    self.add_module(name, modules[name])
                except KeyError as e:
                    raise ValueError(f"graph node '{name}': the name is taken by nn.Module itself ({e}); rename the node") from e

    def forward(self, x):
        values = {"input": x}
        for name, kind, inputs in self.petnet_nodes:
            args = [values[i] for i in inputs]
            if kind == "add":
                y = args[0]
                for a in args[1:]:
                    y = y + a
            elif kind == "concat":
                y = torch.cat(args, dim=1)
            else:
                y = getattr(self, name)(args[0])
            values[name] = y
        return values[self.petnet_nodes[-1][0]]


def is_graph_spec(spec):
    """Is the text a graph (name = kind <- inputs; ...) rather than a layer list? (an '=' before any ':' or '(')"""
    head = spec.split(";")[0]
    eq = head.find("=")
    return eq > 0 and all(c not in head[:eq] for c in ":(,") and head[:eq].strip().isidentifier()


def parse_graph(spec):
    """PetNet's graph text (NetSetGraph(), NetGetSpec()) -> [(name, entry, inputs)]; a node without '<-' takes the
    previous node (the Net's input for the first)."""
    nodes, prev, names = [], "input", {"input"}
    for text in _split_top(spec, ";"):
        text = text.strip()
        if not text:
            continue
        name, eq, rest = text.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise ValueError(f"graph entry '{text}': write name = kind:args <- input, ... (name an identifier)")
        if name in names:
            raise ValueError(f"graph entry '{text}': the name '{name}' is used twice (or is 'input', the Net's input)")
        entry, arrow, inputs = rest.partition("<-")
        inputs = [i.strip() for i in inputs.split(",")] if arrow else [prev]
        for i in inputs:
            if i not in names:
                raise ValueError(f"graph node '{name}': input '{i}' is not an earlier node or 'input'")
        nodes.append((name, entry.strip(), inputs))
        names.add(name)
        prev = name
    if not nodes:
        raise ValueError(f"'{spec}' has no graph node")
    return nodes


def _join_state(name, kind, states):
    """The state after an add or concat node of input states"""
    if len(states) < 2:
        raise ValueError(f"graph node '{name}': {kind} takes at least 2 inputs")
    first = states[0]
    if kind == "add":
        for s in states[1:]:
            if s.shape != first.shape:
                raise ValueError(f"graph node '{name}': add needs inputs of one shape, not {' and '.join(shape_to_string(t.shape) for t in states)}")
            if not s.same_layout(first):
                raise ValueError(f"graph node '{name}': add of flat features in different orders in PyTorch's layout (one input comes from a "
                                 "flatten of (h, w, c) data, another from a dense layer): put a dense layer after the flatten")
        return first
    if any(s.shape[:-1] != first.shape[:-1] or len(s.shape) != len(first.shape) for s in states):
        raise ValueError(f"graph node '{name}': concat joins along the last dimension; its inputs {', '.join(shape_to_string(t.shape) for t in states)} differ before it")
    shape = first.shape[:-1] + (sum(s.shape[-1] for s in states),)
    if len(shape) > 1 or all(s.order is None for s in states):
        return _State(shape)
    order, offset = [], 0  # flat features: torch's are the inputs' one after the other, as PetNet's
    for s in states:
        order.append((np.arange(s.shape[0]) if s.order is None else np.asarray(s.order)) + offset)
        offset += s.shape[0]
    return _State(shape, np.concatenate(order))


def build_graph(spec, input_shape):
    """The Graph (float64) equivalent to a PetNet graph on samples of input_shape."""
    states, nodes, modules = {"input": _State(tuple(input_shape))}, [], {}
    for name, entry, inputs in parse_graph(spec):
        kind, args = _split_entry(entry)
        if kind in _JOINS:
            if args:
                raise ValueError(f"graph node '{name}': {kind} takes no arguments, not '{args}'")
            states[name] = _join_state(name, kind, [states[i] for i in inputs])
            nodes.append((name, kind, inputs))
            continue
        if len(inputs) != 1:
            raise ValueError(f"graph node '{name}': {kind} takes one input, not {len(inputs)} (a join such as add or concat takes several)")
        try:
            module = _make_module(kind, args, states[inputs[0]].shape)
            states[name], _ = _bind(_group_one(module), states[inputs[0]])
        except ValueError as e:
            raise ValueError(f"graph node '{name}' (-net_graph): {e}") from e
        modules[name] = module
        nodes.append((name, "layer", inputs))
    model = Graph(nodes, modules)
    model.petnet_input_shape = tuple(input_shape)
    return model


_ADDS = ("add", "iadd")
_CATS = ("cat", "concat", "concatenate")


def _node_name(text, taken):
    """An identifier PetNet accepts as a node name, not yet taken (and not 'input')"""
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in text).strip("_") or "node"  # ONNX's "/blk/Conv" -> blk_Conv
    if name[0].isdigit():
        name = "n" + name
    base, k = name, 1
    while name in taken or name == "input":
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _graph_nodes(model):
    """[(name, kind, inputs, group)] of a model as a PetNet graph: a Graph's own nodes, or those of any nn.Module whose
    forward torch.fx traces into supported modules, the functional relu/tanh/sigmoid, torch.flatten(x, 1), additions
    (+, torch.add) and torch.cat along dim 1; group is (entry, [modules]) for a layer node, None for a join. AdaptiveAvgPool(1)
    followed by a flatten is one globalavgpool node."""
    if isinstance(model, Graph):
        return [(name, kind, list(inputs), None if kind in _JOINS else _group_one(getattr(model, name))) for name, kind, inputs in model.petnet_nodes]
    what = type(model).__name__
    try:
        graph = _Tracer().trace(model)
    except Exception as e:
        raise ValueError(f"{what}: torch.fx cannot trace its forward ({e}): write the model as an nn.Sequential or a petnet_torch.Graph") from e
    modules, names, taken, pending, nodes, out = dict(model.named_modules()), {}, set(), {}, [], None
    for node in graph.nodes:
        label = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", str(node.target))
        if node.op == "placeholder":
            if names:
                raise ValueError(f"{what}.forward takes more than one input: a PetNet Net takes one")
            names[node] = "input"
            continue
        if node.op == "output":
            out = node.args[0]
            break
        if node.op == "get_attr":
            raise ValueError(f"{what}.forward reads the tensor '{node.target}' directly: PetNet's layers hold their own parameters, use modules")
        args = [a for a in node.args if isinstance(a, torch.fx.Node)]
        for a in args:
            if a in pending and not (label == "flatten" or (node.op == "call_module" and isinstance(modules[node.target], nn.Flatten))):
                raise ValueError(f"{what}.forward: {pending[a][1]} is PetNet's globalavgpool only when a flatten follows it")
        if label in _CATS and node.op == "call_function":
            seq = node.args[0] if node.args else node.kwargs.get("tensors")
            dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
            if not isinstance(seq, (list, tuple)) or not all(isinstance(a, torch.fx.Node) for a in seq) or dim not in (1, -1):
                raise ValueError(f"{what}.forward: torch.cat at '{node.name}' must join model values along dim 1 (the channels, PetNet's last dimension)")
            nodes.append((_node_name(node.name, taken), "concat", [names[a] for a in seq], ("dim", dim)))
        elif label in _ADDS and len(args) == 2 and len(node.args) == 2 and not node.kwargs:
            nodes.append((_node_name(node.name, taken), "add", [names[a] for a in args], None))
        else:
            if len(args) != 1 or args[0] not in names and args[0] not in pending:
                raise ValueError(f"{what}.forward: '{node.name}' ({label}) takes {len(args)} model values: PetNet's layers take one, add and torch.cat several")
            extra = list(node.args[1:]) + list(node.kwargs.values())
            if node.op == "call_module":
                m = modules[node.target]
            elif label == "flatten" and extra in ([1], [1, -1]):
                m = nn.Flatten()
            elif label in _FUNCTIONS and not extra:
                m = _FUNCTIONS[label]()
            else:
                raise ValueError(f"{what}.forward calls '{label}' at '{node.name}', which is not a supported module: use the modules PetNet has "
                                 "(see petnet_torch.py's help), torch.flatten(x, 1), relu, tanh, sigmoid, + and torch.cat(..., dim=1)")
            if isinstance(m, (nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)):
                nsd = 2 if isinstance(m, nn.AdaptiveAvgPool2d) else 3
                if _as_tuple(m.output_size, nsd) != (1,) * nsd:
                    raise ValueError(f"{type(m).__name__} is PetNet's globalavgpool only with output size 1")
                pending[node] = (m, type(m).__name__, names[args[0]])
                continue
            if args[0] in pending:
                gap, _, source = pending.pop(args[0])
                if not isinstance(m, nn.Flatten):
                    raise ValueError(f"{what}.forward: {type(gap).__name__}(1) is PetNet's globalavgpool only when a flatten follows it")
                nodes.append((_node_name(node.name, taken), "layer", [source], ("globalavgpool", [gap, m])))
            else:
                nodes.append((_node_name(node.name, taken), "layer", [names[args[0]]], _group_one(m)))
        names[node] = nodes[-1][0]
    if pending:
        raise ValueError(f"{what}.forward: an adaptive average pooling is not followed by a flatten (PetNet's globalavgpool is both)")
    if not nodes or not isinstance(out, torch.fx.Node) or names.get(out) != nodes[-1][0]:
        raise ValueError(f"{what}.forward must return the value it computes last (PetNet's output is its last node)")
    return [(name, kind, inputs, group) for name, kind, inputs, group in nodes]


def _is_graph(model):
    """Does the model need a PetNet graph (a Graph, or a traced forward with joins or values used out of order)?"""
    if isinstance(model, Graph):
        return True
    if isinstance(model, (nn.Sequential, list, tuple)):
        return False
    nodes = _graph_nodes(model)
    return any(kind in _JOINS for _, kind, _, _ in nodes) or any(inputs != [prev] for (_, _, inputs, _), prev in zip(nodes, ["input"] + [n[0] for n in nodes]))


def graph_spec(model):
    """PetNet's graph text of a model, as NetGetSpec() writes it: "name = entry <- input, ...;" joined by blanks."""
    parts = []
    for name, kind, inputs, group in _graph_nodes(model):
        parts.append(f"{name} = {kind if kind in _JOINS else group[0]} <- {', '.join(inputs)};")
    return " ".join(parts)


def _plan_graph(model, input_shape):
    """(output state, [_Tensor] named '<node>.<name>') of a graph model"""
    states, tensors = {"input": _State(tuple(input_shape))}, []
    for name, kind, inputs, group in _graph_nodes(model):
        if kind in _JOINS:
            states[name] = _join_state(name, kind, [states[i] for i in inputs])
            if group and group[1] == -1 and len(states[name].shape) > 1:
                raise ValueError(f"graph node '{name}': torch.cat(dim=-1) on NCHW data joins the widths, not the channels (PetNet's concat): use dim=1")
            continue
        try:
            states[name], inner = _bind(group, states[inputs[0]])
        except ValueError as e:
            raise ValueError(f"graph node '{name}': {e}") from e
        tensors += [_prefixed(f"{name}.{t.name}", t) for t in inner]
    return states[name], tensors


def spec_of(model):
    """PetNet's text for a model: a layer list (NetSetLayers()) for a chain, a graph (NetSetGraph()) otherwise."""
    return graph_spec(model) if _is_graph(model) else spec_from_sequential(model)


# ---------------------------------------------------------------------------------------------- batches
def to_torch_batch(x, input_shape):
    """A PetNet batch (n samples, channels last, any shape holding n * prod(input_shape) values) -> PyTorch's layout."""
    x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    nd = len(input_shape)
    if nd >= 3:  # (h, w, c) -> NCHW, (d, h, w, c) -> NCDHW
        return x.reshape((-1,) + tuple(input_shape)).permute(0, nd, *range(1, nd)).contiguous()
    if nd == 2:  # (T, E) tokens: (N, T, E), the same order
        return x.reshape((-1,) + tuple(input_shape))
    return x.reshape(-1, math.prod(input_shape))


def from_torch_batch(y, state):
    """A PyTorch output -> PetNet's [n][out] (channels last, PetNet's feature order)."""
    if y.dim() >= 4:
        return y.permute(0, *range(2, y.dim()), 1).reshape(y.shape[0], -1)
    y = y.reshape(y.shape[0], -1)
    if state.order is None:
        return y
    out = torch.empty_like(y)
    out[:, torch.as_tensor(state.order)] = y
    return out


def forward(model, x, input_shape=None, train=False):
    """PetNet's forward pass in PyTorch: x [n][...] samples channels last -> [n][out] in PetNet's layout.
    train: batch statistics (and running-statistics updates) as PetNet in training mode."""
    shape = tuple(input_shape or getattr(model, "petnet_input_shape", None) or np.asarray(x).shape[1:])
    final, _ = _plan(model, shape)
    model.train(train)
    with torch.no_grad():
        y = model(to_torch_batch(x, shape))
    return from_torch_batch(y, final)


# ---------------------------------------------------------------------------------------------- files
def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def checksum(values):
    """A tensor's "crc32" attribute: CRC-32 of its flat values as little-endian float64, 8 lowercase hex digits."""
    return f"{zlib.crc32(np.ascontiguousarray(values, dtype='<f8').reshape(-1).tobytes()) & 0xffffffff:08x}"


def header_checksum(spec, input_shape, nparams, nbuffers, norm=None, grid=0):
    """/petnet's "header_crc32" (format version 4): CRC-32 of the layer list, the input shape, the counts, the grid
    and the input normalisation (scale, mean, std) or None, laid out as NetIOHeaderChecksum_Private() (src/net/netio.c)."""
    raw = spec.encode() + b"\0" + shape_to_string(input_shape).encode() + b"\0" + struct.pack("<qqqB", nparams, nbuffers, grid, norm is not None)
    return f"{zlib.crc32(raw + (struct.pack('<3d', *norm) if norm is not None else b'')) & 0xffffffff:08x}"


def _read_header(f, path):
    if GROUP not in f:
        raise ValueError(f"{path} is not a PetNet model file: no /{GROUP} group")
    attrs = f[GROUP].attrs
    version = int(attrs["version"])
    if version > FORMAT_VERSION or version < 1:
        raise ValueError(f"{path} has format version {version}; this script reads 1 to {FORMAT_VERSION}")
    spec, input_shape = _text(attrs["spec"]), parse_shape(_text(attrs["input_shape"]))
    if version >= 4:
        norm = tuple(float(attrs[k]) for k in ("input_scale", "input_mean", "input_std")) if "input_scale" in attrs else None
        if _text(attrs.get("header_crc32", b"")) != header_checksum(spec, input_shape, int(attrs["nparams"]), int(attrs["nbuffers"]), norm, int(attrs.get("grid", -1))):
            raise ValueError(f"{path}: /{GROUP}'s attributes do not match their checksum (header_crc32): the file is corrupt")
    return version, spec, input_shape


def _read_tensors(f, path, version, tensors, spec):
    """The file's tensors into the planned ones (their PyTorch tensors), checking shapes and checksums."""
    with torch.no_grad():
        for t in tensors:
            if t.counter:
                if version >= 3 and t.name in f:
                    value = np.asarray(f[t.name][...])
                    if value.shape != () or value.dtype.kind not in "iu":
                        raise ValueError(f"{path}: '{t.name}' must be one integer, not {value.dtype} of shape {value.shape}")
                    if _text(f[t.name].attrs.get("crc32", b"")) != checksum(value):
                        raise ValueError(f"{path}: '{t.name}' does not match its checksum: the file is corrupt")
                    t.tensor.fill_(int(value))
                else:
                    t.tensor.zero_()
                continue
            if t.name not in f:
                raise KeyError(f"{path} has no dataset '{t.name}' needed by '{spec}'")
            data = np.asarray(f[t.name][...], dtype=np.float64)
            if version >= 3:
                if data.shape != tuple(t.tensor.shape):
                    raise ValueError(f"{path}: '{t.name}' has shape {data.shape}, the model needs {tuple(t.tensor.shape)}")
            else:
                data = data.reshape(-1)
                if data.size != t.tensor.numel():
                    raise ValueError(f"{path}: '{t.name}' has {data.size} values, {tuple(t.tensor.shape)} needs {t.tensor.numel()}")
            if "shape" in f[t.name].attrs and parse_shape(_text(f[t.name].attrs["shape"])) != tuple(t.tensor.shape):
                raise ValueError(f"{path}: '{t.name}' has shape {_text(f[t.name].attrs['shape'])}, expected {tuple(t.tensor.shape)}")
            if version >= 2:
                if "crc32" not in f[t.name].attrs:
                    raise ValueError(f"{path}: '{t.name}' has no 'crc32' attribute, which files of version {version} carry")
                if _text(f[t.name].attrs["crc32"]) != checksum(data):
                    raise ValueError(f"{path}: '{t.name}' does not match its checksum: the file is corrupt")
            value = torch.from_numpy(data.copy())
            t.tensor.copy_(value if version >= 3 else t.unpack(value))


def load(path):
    """Reads a PetNet HDF5 model file (format 1 to 4): returns (model in float64, eval mode, input shape tuple), the model
    an nn.Sequential for a layer list, a Graph for a graph (-net_graph)."""
    with h5py.File(path, "r") as f:
        version, spec, input_shape = _read_header(f, path)
        model = build_graph(spec, input_shape) if is_graph_spec(spec) else build_sequential(spec, input_shape)
        _, tensors = _plan(model, input_shape)
        _read_tensors(f, path, version, tensors, spec)
    model.petnet_input_shape = input_shape
    return model.eval(), input_shape


def load_into(model, path):
    """Loads a PetNet HDF5 model file into a model of yours (nn.Sequential, or an nn.Module whose forward is a chain of
    the supported modules) whose layers are those of the file; returns the input shape (h, w, c) or (f,)."""
    with h5py.File(path, "r") as f:
        version, spec, input_shape = _read_header(f, path)
        if spec_of(model) != spec:
            raise ValueError(f"{path} holds '{spec}', the model is '{spec_of(model)}'")
        _, tensors = _plan(model, input_shape)
        _read_tensors(f, path, version, tensors, spec)
    return input_shape


def _write(path, spec, input_shape, datasets, nparams, nbuffers, version=FORMAT_VERSION):
    """A model file: the group /petnet (version, spec, input_shape, nparams, nbuffers; from version 4 grid 0 and
    header_crc32) and datasets [(name, values, shape)], each with its crc32 and, unless shape is None (a counter such as
    num_batches_tracked), its attribute "shape" (PyTorch's)."""
    with h5py.File(path, "w") as f:
        group = f.create_group(GROUP)
        # fixed-length strings and 32-bit ints, as PETSc's HDF5 viewer reads them
        group.attrs["version"] = np.int32(version)
        group.attrs["spec"] = np.bytes_(spec)
        group.attrs["input_shape"] = np.bytes_(shape_to_string(input_shape))
        group.attrs["nparams"] = np.int32(nparams)
        group.attrs["nbuffers"] = np.int32(nbuffers)
        if version >= 4:
            group.attrs["grid"] = np.int32(0)
            group.attrs["header_crc32"] = np.bytes_(header_checksum(spec, input_shape, nparams, nbuffers))
        for name, data, shape in datasets:
            dataset = f.create_dataset(name, data=data)
            if shape is not None:
                dataset.attrs["shape"] = np.bytes_(",".join(str(d) for d in shape))
            dataset.attrs["crc32"] = np.bytes_(checksum(data))


def save(model, input_shape, path, version=FORMAT_VERSION):
    """Writes a model (nn.Sequential, or an nn.Module whose forward is a chain of the supported modules) as a PetNet
    HDF5 model file, which NetLoad() reads on any number of ranks. version=2 writes the old layout (for tests)."""
    if version not in (2, 3, 4):
        raise ValueError(f"save() writes format versions 2, 3 and 4, not {version}")
    spec = spec_of(model)
    _, tensors = _plan(model, input_shape)
    nparams = sum(t.tensor.numel() for t in tensors if not t.buffer)
    nbuffers = sum(t.tensor.numel() for t in tensors if t.buffer and not t.counter)
    datasets = []
    with torch.no_grad():
        for t in tensors:
            if t.counter:
                if version >= 3:
                    datasets.append((t.name, np.int64(t.tensor.item()), None))
                continue
            value = t.tensor.detach().to(torch.float64)
            datasets.append((t.name, (value if version >= 3 else t.pack(value)).numpy(), tuple(t.tensor.shape)))
    _write(path, spec, input_shape, datasets, nparams, nbuffers, version)


def state_arrays(model, input_shape):
    """{file name: array}: what save() would write, for comparisons."""
    _, tensors = _plan(model, input_shape)
    with torch.no_grad():
        return {t.name: t.tensor.detach().to(torch.float64).numpy().copy() for t in tensors}


# ---------------------------------------------------------------------------------------------- nanoGPT names
def _charlm_names(spec):
    """{PetNet key prefix: (nanoGPT prefix, reshape to 2-D)} for bin/charlm's models (examples/charlm.c): the GPT
    embedding:V:E, position:P, L x [residual(layernorm,attention:H:causal), residual(layernorm,dense:F:tokens,gelu,
    dense:E:tokens)] (or transformer:H:F:causal, the same block), layernorm, dense:V:tokens; or the per-position
    stand-in embedding, layernorm, conv2d:F:1, gelu, conv2d:E:1, layernorm, conv2d:V:1 (1x1 kernels: Linear weights)."""
    entries = [_split_entry(e) for e in _split_top(spec, ",")]
    kinds = [k for k, _ in entries]
    if kinds == ["embedding", "layernorm", "conv2d", "gelu", "conv2d", "layernorm", "conv2d"]:
        return {"0.": ("wte.", False), "1.": ("ln_1.", False), "2.": ("c_fc.", True), "4.": ("c_proj.", True), "5.": ("ln_f.", False),
                "6.": ("lm_head.", True)}, "mlp"
    if kinds[:1] != ["embedding"] or kinds[-2:] != ["layernorm", "dense"]:
        raise ValueError(f"'{spec}' is not a bin/charlm model (embedding, position, transformer blocks, layernorm, dense)")
    names, block, i = {"0.": ("transformer.wte.", False)}, 0, 1
    if kinds[1] == "position":  # (bin/charlm without the position layer: none, arch=gpt_nope)
        names["1."], i = ("transformer.wpe.", False), 2
    while i < len(entries) - 2:
        kind, args = entries[i]
        inner = [k for k, _ in (_split_entry(e) for e in _split_top(args, ","))] if kind == "residual" else []
        h = f"transformer.h.{block}."
        if kind == "transformer":  # its nodes I.attn.res.<j>, I.mlp.res.<j> (_BLOCK_TENSORS)
            for ours, _, theirs, _ in _BLOCK_TENSORS:
                names[f"{i}.{ours.rsplit('.', 1)[0]}."] = (h + theirs.rsplit(".", 1)[0] + ".", False)
            i += 1
        elif inner == ["layernorm", "attention"] and i + 1 < len(entries) - 2:
            after = [k for k, _ in (_split_entry(e) for e in _split_top(entries[i + 1][1], ","))]
            if entries[i + 1][0] != "residual" or after != ["layernorm", "dense", "gelu", "dense"]:
                raise ValueError(f"'{spec}': the attention block {i} is not followed by residual(layernorm,dense,gelu,dense)")
            names.update({f"{i}.res.0.": (h + "ln_1.", False), f"{i}.res.1.": (h + "attn.", False), f"{i + 1}.res.0.": (h + "ln_2.", False),
                          f"{i + 1}.res.1.": (h + "mlp.c_fc.", False), f"{i + 1}.res.3.": (h + "mlp.c_proj.", False)})
            i += 2
        else:
            raise ValueError(f"'{spec}': entry {i} ({kind}) is not a transformer block")
        block += 1
    names[f"{i}."] = ("transformer.ln_f.", False)
    names[f"{i + 1}."] = ("lm_head.", False)
    return names, "gpt"


def charlm_state_dict(path):
    """A bin/charlm model file (-net_save) as a state_dict under nanoGPT's names (transformer.wte, transformer.wpe,
    transformer.h.N.ln_1 / attn (nn.MultiheadAttention: in_proj_weight, in_proj_bias, out_proj) / ln_2 / mlp.c_fc /
    mlp.c_proj, transformer.ln_f, lm_head; the stand-in: wte, ln_1, c_fc, c_proj, ln_f, lm_head), float64 tensors whose
    checksums were verified: load_state_dict(strict=True) of share/bench/charlm_torch.py's GPT (or StandIn) takes it.
    Returns (state_dict, arch "gpt" or "mlp", the file's spec, its input shape (T,) or (T, 1))."""
    with h5py.File(path, "r") as f:
        version, spec, input_shape = _read_header(f, path)
        if version < 3:
            raise ValueError(f"{path} has format version {version}: bin/charlm files are version 3 or later")
        names, arch = _charlm_names(spec)
        state = {}
        for key in f:
            if key == GROUP:
                continue
            values = np.asarray(f[key][()], dtype=np.float64)
            if _text(f[key].attrs.get("crc32", b"")) != checksum(values):
                raise ValueError(f"{path}: tensor {key} does not match its checksum (crc32): the file is corrupt")
            prefix = max((p for p in names if key.startswith(p)), key=len, default=None)
            if prefix is None:
                raise ValueError(f"{path}: tensor {key} has no nanoGPT name in '{spec}'")
            to, flat = names[prefix]
            t = torch.from_numpy(values.copy())
            state[to + key[len(prefix):]] = t.reshape(t.shape[0], -1) if flat and t.dim() > 2 else t
    return state, arch, spec, input_shape


def encoder_state_dict(path):
    """A model file whose layer list is transformer:H:F blocks, optionally followed by one layernorm (written by
    NetSave(), -net_save, or save()), as a state_dict under nn.TransformerEncoder's names: layers.N.self_attn.
    in_proj_weight, layers.N.norm1.weight, layers.N.linear1.weight, ... (_BLOCK_TENSORS) and norm.weight, norm.bias.
    load_state_dict(strict=True) of nn.TransformerEncoder(encoder_layer(E, H, F), num_layers=L, norm=nn.LayerNorm(E)
    or None) takes it. Returns (state_dict, [(H, F, causal) per block], the input shape (T, E)); checksums verified."""
    with h5py.File(path, "r") as f:
        version, spec, input_shape = _read_header(f, path)
        entries = [_split_entry(e) for e in _split_top(spec, ",")]
        norm = len(entries) > 1 and entries[-1][0] == "layernorm"
        blocks = entries[:-1] if norm else entries
        if version < 3 or not blocks or any(kind != "transformer" for kind, _ in blocks) or len(input_shape) != 2:
            raise ValueError(f"{path} holds '{spec}' on {shape_to_string(input_shape)} (format version {version}): nn.TransformerEncoder's names fit transformer:H:F "
                             "blocks on (T, E) samples, optionally followed by one layernorm, in files of format version 3 or later")
        names = {f"{i}.{ours}": f"layers.{i}.{theirs}" for i in range(len(blocks)) for ours, theirs, _, _ in _BLOCK_TENSORS}
        if norm:
            names.update({f"{len(blocks)}.weight": "norm.weight", f"{len(blocks)}.bias": "norm.bias"})
        state = {}
        for key, to in names.items():
            if key not in f:
                raise KeyError(f"{path} has no dataset '{key}' (nn.TransformerEncoder's {to}) needed by '{spec}'")
            values = np.asarray(f[key][()], dtype=np.float64)
            if _text(f[key].attrs.get("crc32", b"")) != checksum(values):
                raise ValueError(f"{path}: tensor {key} does not match its checksum (crc32): the file is corrupt")
            state[to] = torch.from_numpy(values.copy())
        extra = sorted(k for k in f if k != GROUP and k not in names)
        if extra:
            raise ValueError(f"{path} has datasets {extra[:4]} that '{spec}' does not: the file is not PetNet's")
    sizes = []
    for kind, args in blocks:
        fields = args.split(":")
        sizes.append((int(fields[0]), int(fields[1]), fields[2:] == ["causal"]))
    return state, sizes, input_shape


def _charlm_tensors(state):
    """The spec's sizes and {nanoGPT key: PyTorch shape} of the model whose state_dict is state: share/bench/
    charlm_torch.py's GPT (transformer.wte, optional transformer.wpe, transformer.h.0 .. L-1, ln_f, lm_head) or its
    StandIn (wte, ln_1, c_fc, c_proj, ln_f, lm_head). The sizes come from wte ([V][E]), wpe ([P][E]), the block
    numbers (L) and the first c_fc ([F][E]); every other tensor must then have the shape listed."""
    def need(key, what):
        if key not in state:
            raise KeyError(f"the state_dict lacks '{key}' ({what}): give the state_dict of share/bench/charlm_torch.py's GPT (nanoGPT's names) or StandIn")
        return tuple(state[key].shape)

    gpt = any(k.startswith("transformer.") for k in state)
    wte = need("transformer.wte.weight" if gpt else "wte.weight", "the token embedding [V][E]")
    if len(wte) != 2:
        raise ValueError(f"'{'transformer.' if gpt else ''}wte.weight' has shape {wte}: the token embedding is [V][E]")
    (V, E), shapes = wte, {}
    if not gpt:
        F = need("c_fc.weight", "the MLP's first Linear [F][E]")[0]
        for name, shape in (("wte.weight", (V, E)), ("ln_1.weight", (E,)), ("ln_1.bias", (E,)), ("c_fc.weight", (F, E)), ("c_fc.bias", (F,)), ("c_proj.weight", (E, F)),
                            ("c_proj.bias", (E,)), ("ln_f.weight", (E,)), ("ln_f.bias", (E,)), ("lm_head.weight", (V, E)), ("lm_head.bias", (V,))):
            shapes[name] = shape
        return dict(arch="mlp", V=V, E=E, F=F, P=0, L=0), shapes
    P = need("transformer.wpe.weight", "the position table [P][E]")[0] if "transformer.wpe.weight" in state else 0
    blocks = {k.split(".")[2] for k in state if k.startswith("transformer.h.")}
    if not all(b.isdigit() for b in blocks) or sorted(int(b) for b in blocks) != list(range(len(blocks))):
        raise ValueError(f"the blocks of the state_dict are transformer.h.{{{','.join(sorted(blocks))}}}: nanoGPT numbers them 0 .. L-1")
    L = len(blocks)
    F = need("transformer.h.0.mlp.c_fc.weight", "block 0's MLP, [F][E]")[0] if L else 4 * E
    shapes["transformer.wte.weight"] = (V, E)
    if P:
        shapes["transformer.wpe.weight"] = (P, E)
    for b in range(L):
        for _, _, theirs, shape in _BLOCK_TENSORS:
            shapes[f"transformer.h.{b}.{theirs}"] = _block_shape(shape, E, F)
    for name, shape in (("transformer.ln_f.weight", (E,)), ("transformer.ln_f.bias", (E,)), ("lm_head.weight", (V, E)), ("lm_head.bias", (V,))):
        shapes[name] = shape
    return dict(arch="gpt", V=V, E=E, F=F, P=P, L=L), shapes


def charlm_save(state, path, heads, context=None):
    """The reverse of charlm_state_dict(): a state_dict under nanoGPT's names (share/bench/charlm_torch.py's GPT: wte,
    optional wpe, blocks transformer.h.N with nn.MultiheadAttention's in_proj, ln_f, lm_head; or its StandIn) written as
    a PetNet model file that bin/charlm reads (-net_load FILE; -charlm_iterations 0 evaluates it). The GPT becomes
    embedding:V:E[,position:P],transformer:H:F:causal x L,layernorm,dense:V:tokens on T ids, the stand-in
    embedding:V:E,layernorm,conv2d:F:1:1:0,gelu,conv2d:E:1:1:0,layernorm,conv2d:V:1:1:0 on (T, 1) ids (its Linear
    weights as 1x1 kernels). heads: the attention heads H (a state_dict does not record them; they must divide E);
    context: the window T (-charlm_context; default the position table's P rows; the stand-in and a GPT without wpe
    need it). V must be the corpus's vocabulary (bin/charlm refuses another). Refused, naming the key: a key missing,
    a key the model does not have, a tensor of another shape. Returns (spec, input_shape)."""
    state = {k: (v.detach() if torch.is_tensor(v) else torch.as_tensor(np.asarray(v))) for k, v in state.items()}
    sizes, shapes = _charlm_tensors(state)
    V, E, F, P, L = (sizes[k] for k in "VEFPL")
    missing = [k for k in shapes if k not in state]
    if missing:
        raise KeyError(f"the state_dict lacks {', '.join(repr(k) for k in missing[:4])}{' ...' if len(missing) > 4 else ''} (shape {shapes[missing[0]]}): "
                       f"a {sizes['arch']} of V={V}, E={E}, F={F}, L={L} has them")
    unknown = sorted(k for k in state if k not in shapes)
    if unknown:
        raise KeyError(f"the state_dict has {', '.join(repr(k) for k in unknown[:4])}{' ...' if len(unknown) > 4 else ''}, which bin/charlm's model lacks: "
                       "give the state_dict of share/bench/charlm_torch.py's GPT or StandIn (load_state_dict(strict=True) would refuse it too)")
    for k, shape in shapes.items():
        if tuple(state[k].shape) != shape:
            raise ValueError(f"'{k}' has shape {tuple(state[k].shape)}, but the model (V={V}, E={E}, F={F}) needs {shape}")
    T = context if context is not None else P
    if not T or T <= 0:
        raise ValueError(f"give the context (charlm_save(..., context=T), -charlm_context): {'the stand-in' if sizes['arch'] == 'mlp' else 'a GPT without transformer.wpe'} does not record it")
    if P and T > P:
        raise ValueError(f"context {T} is longer than the position table's {P} rows (transformer.wpe.weight): give a context of {P} or less")
    if sizes["arch"] == "gpt" and (not isinstance(heads, int) or heads <= 0 or E % heads):
        raise ValueError(f"heads={heads!r} must be a positive integer dividing the embedding width E = {E} (nn.MultiheadAttention's num_heads)")
    if sizes["arch"] == "gpt":
        spec = f"embedding:{V}:{E}" + (f",position:{P}" if P else "") + f",transformer:{heads}:{F}:causal" * L + f",layernorm,dense:{V}:tokens"
        input_shape = (T,)
    else:
        spec, input_shape = f"embedding:{V}:{E},layernorm,conv2d:{F}:1:1:0,gelu,conv2d:{E}:1:1:0,layernorm,conv2d:{V}:1:1:0", (T, 1)
    names, _ = _charlm_names(spec)
    back = {to: (ours, flat) for ours, (to, flat) in names.items()}
    datasets = []
    for k in shapes:  # in the model's order
        prefix = max((p for p in back if k.startswith(p)), key=len)
        ours, flat = back[prefix]
        data = state[k].to(torch.float64).numpy()
        if flat and data.ndim == 2:  # a Linear of the stand-in: conv2d's [out][in][1][1]
            data = data.reshape(data.shape + (1, 1))
        datasets.append((ours + k[len(prefix):], np.ascontiguousarray(data), data.shape))
    _write(path, spec, input_shape, datasets, sum(d.size for _, d, _ in datasets), 0)
    return spec, input_shape


# ---------------------------------------------------------------------------------------------- checks
def relative_error(y, ref):
    y, ref = np.asarray(y).reshape(-1), np.asarray(ref).reshape(-1)
    scale = np.max(np.abs(ref))
    return float(np.max(np.abs(y - ref)) / scale) if scale > 0 else float(np.max(np.abs(y - ref)))


def _has_dropout(model):
    return any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.modules())


def check(model_path, data_path, rtol, after_path=None):
    """PyTorch's outputs on a PetNet model file and its data file (eval mode, and training mode if recorded)."""
    model, input_shape = load(model_path)
    with h5py.File(data_path, "r") as f:
        x, ref = f["input"][...], f["output"][...]
        ref_train = f["output_train"][...] if "output_train" in f else None
    with h5py.File(model_path, "r") as f:
        spec = _text(f[GROUP].attrs["spec"])
    n = x.size // math.prod(input_shape)
    ok = True
    derived = spec_of(model)
    if derived != spec:
        print(f"{model_path}: the spec derived from the PyTorch modules, '{derived}', differs from the file's '{spec}'")
        ok = False
    err = relative_error(forward(model, x, input_shape), ref)
    good = err <= rtol
    print(f"{model_path}: '{spec}' on {shape_to_string(input_shape)}: PyTorch float64 vs PetNet on {n} samples: max |diff| / max |y| = {err:.3e} ({'<=' if good else '>'} {rtol:g})")
    ok = ok and good
    if ref_train is not None:
        if _has_dropout(model):
            raise ValueError(f"{data_path} has a training-mode output, but dropout masks differ between PetNet and PyTorch: record one only without dropout")
        err = relative_error(forward(model, x, input_shape, train=True), ref_train)
        after_path = after_path or model_path[:-3] + "_after.h5"
        after, _ = load(after_path)
        ours, theirs = state_arrays(model, input_shape), state_arrays(after, input_shape)
        serr = max(relative_error(ours[k], theirs[k]) for k in ours) if ours else 0.0
        good = err <= rtol and serr <= rtol
        print(f"{model_path}: training mode (batch statistics): output max |diff| / max |y| = {err:.3e}, "
              f"state after the pass vs {after_path}: {serr:.3e} ({'<=' if good else '>'} {rtol:g})")
        ok = ok and good
    return ok


def _randomize(model, seed):
    """Weights, biases and running statistics, uniform (running variances positive), so that loading them is tested."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            fan_in = p[0].numel() if p.dim() > 1 else 1
            scale = 1.5 / math.sqrt(fan_in) if p.dim() > 1 else 0.5
            p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale + (1.0 if name.endswith("weight") and p.dim() == 1 else 0.0))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.rand(b.shape, generator=gen, dtype=torch.float64) * 0.6 - 0.3)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=gen, dtype=torch.float64) * 0.8 + 0.4)
    return model


def export_model(model, input_shape, model_path, data_path, seed=0, samples=10, train=False):
    """Saves a PyTorch model, a random input and PyTorch's output (eval mode; with train also one training-mode pass,
    and the model after it in MODEL_after.h5)."""
    gen = torch.Generator().manual_seed(seed + 1)
    x = (torch.rand((samples,) + tuple(input_shape), generator=gen, dtype=torch.float64) * 3 - 1.5).reshape(samples, -1)
    save(model, input_shape, model_path)
    with h5py.File(data_path, "w") as f:
        f.create_dataset("input", data=x.numpy())
        f.create_dataset("output", data=forward(model, x, input_shape).numpy())
        if train:
            if _has_dropout(model):
                raise ValueError("dropout masks differ between PetNet and PyTorch: export training-mode outputs only without dropout")
            f.create_dataset("output_train", data=forward(model, x, input_shape, train=True).numpy())
    if train:
        save(model, input_shape, model_path[:-3] + "_after.h5")
    model.eval()
    return model


def export(spec, input_shape, model_path, data_path, seed=0, samples=10, train=False):
    torch.manual_seed(seed)
    model = _randomize(build_sequential(spec, input_shape), seed)
    return export_model(model, input_shape, model_path, data_path, seed, samples, train)


def round_trip(model, input_shape, path):
    """save, load: the same spec and the same tensors bit for bit (printed); returns True if so."""
    save(model, input_shape, path)
    again, shape = load(path)
    a, b = state_arrays(model, input_shape), state_arrays(again, shape)
    same = shape == tuple(input_shape) and spec_of(again) == spec_of(model) and a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    print(f"{path}: PyTorch -> HDF5 -> PyTorch round trip of '{spec_of(model)}' {'exact' if same else 'DIFFERS'}")
    return same


def selftest(petnet_prefix, torch_prefix, rtol=1e-12):
    ok = check(petnet_prefix + ".h5", petnet_prefix + "_data.h5", rtol)
    spec = "dense:9,gelu,dense:7,leakyrelu:0.2,dense:5,softplus,dense:4,sigmoid,dense:4,tanh,dense:3,relu,dense:3,identity,dense:2"
    model = export(spec, (5,), torch_prefix + ".h5", torch_prefix + "_data.h5", seed=3)
    return round_trip(model, (5,), torch_prefix + "_again.h5") and ok


def export_onnx(model_path, onnx_path, opset=13, batch=1):
    """The model of a PetNet HDF5 file as ONNX (torch.onnx.export of the float64 nn.Sequential in evaluation mode; input
    "input" NCHW [n][c][h][w] or [n][f], float64, n dynamic; output "logits"), checked with onnx.checker. Returns the
    onnx ModelProto."""
    import onnx  # Debian: python3-onnx

    model, shape = load(model_path)
    x = torch.zeros((batch,) + ((shape[-1],) + tuple(shape[:-1]) if _spatial(shape) else tuple(shape)), dtype=torch.float64)
    torch.onnx.export(model.eval(), x, onnx_path, input_names=["input"], output_names=["logits"], opset_version=opset,
                      dynamic_axes={"input": {0: "n"}, "logits": {0: "n"}}, do_constant_folding=True)
    proto = onnx.load(onnx_path)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def onnx_evaluate(proto, x):
    """Evaluates an ONNX graph of the ops export_onnx() produces, node by node from the graph's own attributes and
    initializers (with torch's functional kernels): an independent check of the exported graph where no ONNX runtime
    is installed (onnxruntime is not in Debian; onnx 1.12 has no onnx.reference). x: the input tensor."""
    from onnx import numpy_helper

    F = nn.functional
    env = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in proto.graph.initializer}
    env[proto.graph.input[0].name] = torch.as_tensor(x)
    for node in proto.graph.node:
        a = {}
        for at in node.attribute:
            a[at.name] = at.i if at.type == at.INT else at.f if at.type == at.FLOAT else list(at.ints) if at.type == at.INTS else \
                torch.from_numpy(numpy_helper.to_array(at.t).copy()) if at.type == at.TENSOR else at.s
        i = [env[n] if n else None for n in node.input]
        op = node.op_type
        nsd = i[0].dim() - 2 if i and i[0] is not None else 2  # spatial dims of an NCHW (2) or NCDHW (3) tensor
        pads = a.get("pads", [0] * 2 * nsd)
        if op in ("Conv", "ConvTranspose", "MaxPool", "AveragePool") and pads[:nsd] != pads[nsd:]:
            raise NotImplementedError(f"onnx_evaluate: {op} with uneven pads {pads}")
        if op == "Conv":
            conv = F.conv2d if nsd == 2 else F.conv3d
            y = conv(i[0], i[1], i[2] if len(i) > 2 else None, a.get("strides", [1] * nsd), pads[:nsd], a.get("dilations", [1] * nsd), a.get("group", 1))
        elif op == "ConvTranspose":
            if any(a.get("output_shape", [])) or a.get("auto_pad", b"NOTSET") != b"NOTSET":
                raise NotImplementedError("onnx_evaluate: ConvTranspose with output_shape or auto_pad")
            y = F.conv_transpose2d(i[0], i[1], i[2] if len(i) > 2 else None, a.get("strides", [1, 1]), pads[:2], a.get("output_padding", [0, 0]), a.get("group", 1), a.get("dilations", [1, 1]))
        elif op == "BatchNormalization":
            y = F.batch_norm(i[0], i[3], i[4], i[1], i[2], False, 0.0, a.get("epsilon", 1e-5))
        elif op == "MaxPool":
            y = (F.max_pool2d if nsd == 2 else F.max_pool3d)(i[0], a["kernel_shape"], a.get("strides", a["kernel_shape"]), pads[:nsd])
        elif op == "AveragePool":
            pool = F.avg_pool2d if nsd == 2 else F.avg_pool3d
            y = pool(i[0], a["kernel_shape"], a.get("strides", a["kernel_shape"]), pads[:nsd], count_include_pad=bool(a.get("count_include_pad", 0)))
        elif op == "Gemm":
            b = i[1].t() if a.get("transB", 0) else i[1]
            y = a.get("alpha", 1.0) * (i[0].t() if a.get("transA", 0) else i[0]) @ b + (a.get("beta", 1.0) * i[2] if len(i) > 2 else 0)
        elif op == "Flatten":
            y = i[0].flatten(a.get("axis", 1))
        elif op == "ReduceMean":
            y = i[0].mean(dim=a["axes"], keepdim=bool(a.get("keepdims", 1)))
        elif op == "GlobalAveragePool":
            y = i[0].mean(dim=tuple(range(2, i[0].dim())), keepdim=True)
        elif op == "Constant":
            y = a["value"]
        elif op == "Concat":
            y = torch.cat(i, dim=a["axis"])
        elif op == "Reshape":
            y = i[0].reshape([i[0].shape[k] if int(v) == 0 else int(v) for k, v in enumerate(i[1])])
        elif op == "Dropout":
            y = i[0]
        elif op == "Sum":
            y = i[0]
            for t in i[1:]:
                y = y + t
        elif op in ("Add", "Mul", "Div", "Sub", "MatMul"):
            y = {"Add": torch.add, "Mul": torch.mul, "Div": torch.div, "Sub": torch.sub, "MatMul": torch.matmul}[op](i[0], i[1])
        elif op in ("Relu", "Tanh", "Sigmoid", "Erf", "Softplus", "Identity"):
            y = {"Relu": torch.relu, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid, "Erf": torch.erf, "Softplus": lambda t: torch.log1p(torch.exp(t)), "Identity": lambda t: t}[op](i[0])
        elif op == "Pad":
            if a.get("mode", b"constant") != b"constant":
                raise NotImplementedError(f"onnx_evaluate: Pad mode {a['mode']}")
            p, nd = [int(v) for v in (i[1] if len(i) > 1 else a["pads"])], i[0].dim()
            value = float(i[2]) if len(i) > 2 and i[2] is not None else 0.0
            y = F.pad(i[0], [p[d + e * nd] for d in reversed(range(nd)) for e in (0, 1)], value=value)
        elif op == "LeakyRelu":
            y = F.leaky_relu(i[0], a.get("alpha", 0.01))
        elif op == "Resize":
            y = _onnx_resize(i[0], i[2] if len(i) > 2 else None, i[3] if len(i) > 3 else None, a)
        else:
            raise NotImplementedError(f"onnx_evaluate: no evaluator for the ONNX op {op}")
        env[node.output[0]] = y
    return env[proto.graph.output[0].name]


# ---------------------------------------------------------------------------------------------- ONNX -> PetNet
ONNX_IMPORTS = ("Gemm, MatMul (+ Add of a bias), Conv, ConvTranspose, Relu, Tanh, Sigmoid, LeakyRelu, Softplus, Identity, Dropout, "
                "GELU as torch writes it (Div by sqrt 2, Erf, Add 1, Mul by the input, Mul by 0.5), "
                "MaxPool, AveragePool (and a Pad of zeros before it), GlobalAveragePool (+ Flatten), BatchNormalization, Flatten, Reshape to (n, -1), "
                "Add and Sum of two model values, Concat along the channels, Resize / Upsample by integer factors")


def _onnx_attrs(node):
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _onnx_gelu_chain(div, x, consts, users):
    """The five nodes of torch.onnx.export's GELU (erf form) that start at div, or None: Div(x, sqrt 2) -> Erf ->
    Add(., 1) -> Mul(x, .) -> Mul(., 0.5), each the only reader of the one before"""
    def const(name, v):
        c = consts.get(name)
        return c is not None and np.size(c) == 1 and abs(float(np.asarray(c).reshape(-1)[0]) - v) <= 1e-6 * abs(v)

    def only_reader(n, op):
        u = users.get(n.output[0], [])
        return u[0] if len(u) == 1 and u[0].op_type == op else None

    if len(div.input) != 2 or div.input[0] != x or not const(div.input[1], math.sqrt(2.0)):
        return None
    erf = only_reader(div, "Erf")
    add = erf and only_reader(erf, "Add")
    if add is None or not any(const(i, 1.0) for i in add.input):
        return None
    mul = only_reader(add, "Mul")
    if mul is None or x not in mul.input:
        return None
    half = only_reader(mul, "Mul")
    if half is None or not any(const(i, 0.5) for i in half.input):
        return None
    return [div, erf, add, mul, half]


def from_onnx(path):
    """An ONNX model (a file or a ModelProto) -> (Graph in float64, input shape channels last): one PetNet node per ONNX
    node of the operators PetNet has (ONNX_IMPORTS), named after the ONNX node (or its output); its weights are the
    initializers. The input must be [n][c][h][w], [n][c][d][h][w] or [n][f] with fixed sizes but the batch. Anything
    else is a ValueError naming the node, its operator and what PetNet imports. save(model, shape, "m.h5") then writes
    a file NetLoad() reads."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(path) if isinstance(path, str) else path
    where = path if isinstance(path, str) else "the ONNX model"
    g = proto.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    consts.update({n.output[0]: numpy_helper.to_array(_onnx_attrs(n)["value"]) for n in g.node if n.op_type == "Constant" and "value" in _onnx_attrs(n)})
    inputs = [v for v in g.input if v.name not in consts]
    if len(inputs) != 1:
        raise ValueError(f"{where}: a PetNet Net has one input, this graph {len(inputs)} ({', '.join(v.name for v in inputs)})")
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) not in (2, 4, 5) or min(dims[1:]) <= 0:
        raise ValueError(f"{where}: input '{inputs[0].name}' has the shape {dims}: PetNet imports [n][f], [n][c][h][w] or [n][c][d][h][w] with fixed sizes but n")
    input_shape = tuple(dims[2:]) + (dims[1],) if len(dims) > 2 else (dims[1],)
    rank = {inputs[0].name: len(dims)}  # ONNX rank of every model value
    value = {inputs[0].name: "input"}  # ONNX value -> PetNet node producing it
    pooled = {}  # ONNX value of a GlobalAveragePool -> (node name, input): a globalavgpool once a flatten follows
    users = {}
    for node in g.node:
        for i in node.input:
            users.setdefault(i, []).append(node)
    nodes, modules, taken, skip, padfor = [], {}, set(), set(), {}

    def fail(node, why):
        label = node.name or (node.output[0] if node.output else "?")
        raise ValueError(f"{where}: ONNX node '{label}' ({node.op_type}) {why}. PetNet imports {ONNX_IMPORTS}")

    def model_inputs(node):
        return [i for i in node.input if i and i in value or i in pooled]

    def emit(node, kind, ins, module=None, out_rank=None):
        name = _node_name(node.name or node.output[0], taken)
        nodes.append((name, kind, ins))
        if module is not None:
            modules[name] = module
        value[node.output[0]] = name
        rank[node.output[0]] = rank[node.input[0]] if out_rank is None else out_rank

    def tensor(t):
        return torch.from_numpy(np.array(t, dtype=np.float64))

    for node in g.node:
        if id(node) in skip:
            continue
        op, a = node.op_type, _onnx_attrs(node)
        if op == "Constant":
            consts[node.output[0]] = numpy_helper.to_array(a["value"])
            continue
        ins = model_inputs(node)
        if any(i in pooled for i in ins) and op not in ("Flatten", "Reshape"):
            fail(node, "reads a GlobalAveragePool's [n][c][1][1] output: PetNet's globalavgpool gives (c), import it followed by Flatten")
        if op in ("Flatten", "Reshape") and ins and ins[0] in pooled:
            if op == "Flatten" and a.get("axis", 1) != 1:
                fail(node, "flattens from an axis other than 1")
            gname, gin = pooled.pop(ins[0])
            nodes.append((gname, "layer", [gin]))
            modules[gname] = GlobalAvgPool()
            value[node.output[0]], rank[node.output[0]] = gname, 2
            continue
        if op in ("Identity", "Dropout"):  # evaluation mode: the same value
            value[node.output[0]], rank[node.output[0]] = value[ins[0]], rank[ins[0]]
            continue
        if op == "Pad":  # torch.onnx.export writes an AvgPool2d with padding as Pad (zeros) + AveragePool
            pads = consts.get(node.input[1]) if len(node.input) > 1 else a.get("pads")
            fill = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else 0
            mode = a.get("mode", b"constant")
            r, nxt = rank[ins[0]], users.get(node.output[0], [])
            if pads is None or mode not in (b"constant", "constant") or float(np.asarray(fill).reshape(-1)[0] if np.size(fill) else 0) != 0:
                fail(node, "is not a constant padding with zeros")
            pads = [int(v) for v in pads]
            if any(pads):
                nsd = r - 2
                spatial = pads[2:r] + pads[r + 2:]
                if pads[:2] != [0, 0] or pads[r:r + 2] != [0, 0] or spatial[:nsd] != spatial[nsd:] or len(nxt) != 1 or nxt[0].op_type != "AveragePool" or any(_onnx_attrs(nxt[0]).get("pads", [0])):
                    fail(node, "pads other than the spatial dims evenly, or not before an AveragePool: PetNet pads inside its layers")
                padfor[id(nxt[0])] = spatial
            value[node.output[0]], rank[node.output[0]] = value[ins[0]], rank[ins[0]]
            continue
        if op in ("Add", "Sum") and len(ins) == 2 and len(node.input) == 2:
            emit(node, "add", [value[i] for i in ins])
            continue
        if op == "Concat":
            axis = a.get("axis")
            if len(ins) != len(node.input) or len(ins) < 2 or axis not in (1, 1 - rank[ins[0]] if rank[ins[0]] == 2 else 1):
                fail(node, f"joins {len(ins)} model values (of {len(node.input)} inputs) along axis {axis}: PetNet's concat joins model values along the channels (axis 1)")
            emit(node, "concat", [value[i] for i in ins])
            continue
        if len(ins) != 1 or node.input[0] != ins[0]:
            fail(node, f"takes {len(ins)} model values: PetNet's layers take one (as their first input), add and concat several")
        r = rank[ins[0]]
        if op in ("Gemm", "MatMul"):
            w = consts.get(node.input[1]) if len(node.input) > 1 else None
            if w is None or w.ndim != 2 or r != 2:
                fail(node, "is not a product of a flat [n][f] value and a constant matrix (a dense layer)")
            bias, out = None, node.output[0]
            if op == "Gemm":
                if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or (len(node.input) > 2 and a.get("beta", 1.0) != 1.0):
                    fail(node, "has transA, alpha or beta: PetNet's dense is x W^T + b")
                w = w.T if not a.get("transB", 0) else w
                bias = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
                if len(node.input) > 2 and node.input[2] and bias is None:
                    fail(node, "adds a bias that is not a constant")
            else:
                w = w.T
                nxt = users.get(out, [])
                if len(nxt) == 1 and nxt[0].op_type == "Add":
                    other = [i for i in nxt[0].input if i != out]
                    if len(other) == 1 and other[0] in consts:
                        bias = consts[other[0]]
                        skip.add(id(nxt[0]))
                        out = nxt[0].output[0]
            if bias is not None:
                bias = np.asarray(bias).reshape(-1)
                if bias.size != w.shape[0]:
                    fail(node, f"adds a bias of {bias.size} values to {w.shape[0]} outputs")
            m = nn.Linear(w.shape[1], w.shape[0], bias=bias is not None, dtype=torch.float64)
            with torch.no_grad():
                m.weight.copy_(tensor(w))
                if bias is not None:
                    m.bias.copy_(tensor(bias))
            emit(node, "layer", [value[ins[0]]], m, 2)
            value[out], rank[out] = value[node.output[0]], 2
            continue
        if op in ("Conv", "ConvTranspose"):
            w = consts.get(node.input[1])
            b = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            nsd = r - 2
            if w is None or nsd not in (2, 3) or (len(node.input) > 2 and node.input[2] and b is None):
                fail(node, "has weights or a bias that are not constants, or a non-image input")
            pads = list(a.get("pads", [0] * 2 * nsd))
            if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID", "NOTSET", "VALID") or pads[:nsd] != pads[nsd:] or a.get("output_shape"):
                fail(node, f"pads unevenly ({pads}, auto_pad {a.get('auto_pad')}): PetNet pads both sides equally")
            k, s, d, groups = tuple(w.shape[2:]), tuple(a.get("strides", [1] * nsd)), tuple(a.get("dilations", [1] * nsd)), a.get("group", 1)
            if op == "Conv":
                m = (nn.Conv2d if nsd == 2 else nn.Conv3d)(w.shape[1] * groups, w.shape[0], k, stride=s, padding=tuple(pads[:nsd]), dilation=d, groups=groups, bias=b is not None, dtype=torch.float64)
            else:
                if nsd != 2:
                    fail(node, "is a 3-D transposed convolution: PetNet has convtranspose2d")
                m = nn.ConvTranspose2d(w.shape[0], w.shape[1] * groups, k, stride=s, padding=tuple(pads[:2]), output_padding=tuple(a.get("output_padding", [0, 0])), groups=groups, bias=b is not None, dilation=d, dtype=torch.float64)
            with torch.no_grad():
                m.weight.copy_(tensor(w))
                if b is not None:
                    m.bias.copy_(tensor(b))
            emit(node, "layer", [value[ins[0]]], m)
            continue
        if op in ("MaxPool", "AveragePool"):
            nsd = r - 2
            pads = list(padfor.get(id(node), a.get("pads", [0] * 2 * nsd)))
            if id(node) in padfor:
                a["count_include_pad"] = 1  # the zeros of the Pad before it count
            if nsd not in (2, 3) or pads[:nsd] != pads[nsd:] or a.get("ceil_mode", 0) or any(v != 1 for v in a.get("dilations", [1])) or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
                fail(node, "has uneven pads, ceil_mode, dilations or auto_pad, or a non-image input: PetNet's pools take a window, a stride and even padding")
            k = tuple(a["kernel_shape"])
            s = tuple(a.get("strides", k))
            if op == "MaxPool":
                m = (nn.MaxPool2d if nsd == 2 else nn.MaxPool3d)(k, stride=s, padding=tuple(pads[:nsd]))
            else:
                if any(pads) and not a.get("count_include_pad", 0):
                    fail(node, "leaves padded taps out of the mean (count_include_pad=0): PetNet's avgpool counts them")
                m = (nn.AvgPool2d if nsd == 2 else nn.AvgPool3d)(k, stride=s, padding=tuple(pads[:nsd]), count_include_pad=True)
            emit(node, "layer", [value[ins[0]]], m)
            continue
        if op == "GlobalAveragePool":
            if r not in (4, 5):
                fail(node, "has a non-image input")
            pooled[node.output[0]] = (_node_name(node.name or node.output[0], taken), value[ins[0]])
            continue
        if op == "BatchNormalization":
            scale, bias, mean, var = (consts.get(i) for i in node.input[1:5])
            if any(t is None for t in (scale, bias, mean, var)) or len(node.output) > 1 and any(node.output[1:]) or a.get("training_mode", 0):
                fail(node, "is not an evaluation-mode BatchNormalization with constant scale, bias, mean and variance")
            if r not in (2, 4, 5):
                fail(node, f"normalises a rank-{r} value")
            m = {2: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}[r](scale.size, eps=float(a.get("epsilon", 1e-5)), momentum=round(1.0 - float(a.get("momentum", 0.9)), 6), dtype=torch.float64)  # ONNX's float32 0.9: 0.1
            with torch.no_grad():
                for t, v in ((m.weight, scale), (m.bias, bias), (m.running_mean, mean), (m.running_var, var)):
                    t.copy_(tensor(v))
            emit(node, "layer", [value[ins[0]]], m)
            continue
        if op in ("Flatten", "Reshape"):
            if op == "Flatten" and a.get("axis", 1) != 1:
                fail(node, "flattens from an axis other than 1")
            if op == "Reshape":
                shape = consts.get(node.input[1])
                if shape is None or [int(v) for v in shape] not in ([-1, 0], [0, -1], [1, -1]) and not (len(shape) == 2 and int(shape[0]) in (0, -1, 1) and int(shape[1]) > 0):
                    fail(node, f"reshapes to {None if shape is None else list(shape)}: PetNet imports a Reshape that flattens each sample, (n, -1)")
            if r == 2:
                value[node.output[0]], rank[node.output[0]] = value[ins[0]], 2
            else:
                emit(node, "layer", [value[ins[0]]], nn.Flatten(), 2)
            continue
        if op in ("Resize", "Upsample"):
            scales = consts.get(node.input[2] if op == "Resize" and len(node.input) > 2 else node.input[1] if op == "Upsample" else "")
            mode = a.get("mode", b"nearest")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            ctm = a.get("coordinate_transformation_mode", b"half_pixel")
            ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
            if scales is None or len(scales) != r or any(float(v) != int(v) or v < 1 for v in scales) or list(scales[:2]) != [1, 1]:
                fail(node, f"scales by {None if scales is None else list(scales)}: PetNet's upsample scales the spatial dims by integer factors given as constants")
            nearest = mode == "nearest" and (op == "Upsample" or (ctm == "asymmetric" and a.get("nearest_mode", b"round_prefer_floor") in (b"floor", "floor")))
            linear = mode in ("linear", "bilinear", "trilinear") and (op == "Resize" and ctm in ("half_pixel", "pytorch_half_pixel"))
            if not (nearest or linear):
                fail(node, f"has mode {mode}, coordinate_transformation_mode {ctm}: PetNet's upsample is nearest (asymmetric, floor) or linear (half_pixel)")
            factors = tuple(float(int(v)) for v in scales[2:])
            m = nn.Upsample(scale_factor=factors, mode="nearest" if nearest else ("bilinear" if r == 4 else "trilinear"), align_corners=None if nearest else False)
            emit(node, "layer", [value[ins[0]]], m)
            continue
        if op == "Div":  # the first node of torch's GELU: the five become one gelu node
            chain = _onnx_gelu_chain(node, ins[0], consts, users)
            if chain is None:
                fail(node, "is not the first node of a GELU (Div by sqrt 2, Erf, Add 1, Mul by the input, Mul by 0.5)")
            skip.update(id(n) for n in chain[1:])
            emit(node, "layer", [value[ins[0]]], nn.GELU(approximate="none"))
            value[chain[-1].output[0]], rank[chain[-1].output[0]] = value[node.output[0]], rank[node.output[0]]
            continue
        simple = {"Relu": nn.ReLU, "Tanh": nn.Tanh, "Sigmoid": nn.Sigmoid, "Softplus": nn.Softplus}
        if op in simple:
            emit(node, "layer", [value[ins[0]]], simple[op]())
            continue
        if op == "LeakyRelu":
            emit(node, "layer", [value[ins[0]]], nn.LeakyReLU(float(a.get("alpha", 0.01))))
            continue
        fail(node, "has no PetNet layer")
    if pooled:
        raise ValueError(f"{where}: a GlobalAveragePool is not followed by a Flatten (PetNet's globalavgpool gives (c), not [c][1][1])")
    out = g.output[0].name
    if value.get(out) is None or not nodes or value[out] != nodes[-1][0]:
        raise ValueError(f"{where}: the graph's output '{out}' is not the value its last node computes (PetNet's output is its last node)")
    model = Graph(nodes, modules)
    model.petnet_input_shape = input_shape
    _plan_graph(model, input_shape)  # the shapes, checked now
    return model.eval(), input_shape


def import_onnx(onnx_path, model_path, data_path=None, samples=5, seed=0):
    """ONNX file -> PetNet model file (from_onnx(), save()); with data_path also a random input and the ONNX graph's own
    output on it, evaluated node by node from the ONNX file (onnx_evaluate), for test_io -torch_import_models. Returns
    (model, input_shape, max |PetNet's Graph - ONNX| / max |ONNX| on that input)."""
    import onnx

    model, shape = from_onnx(onnx_path)
    save(model, shape, model_path)
    proto = onnx.load(onnx_path)
    dtype = torch.float32 if any(t.data_type == onnx.TensorProto.FLOAT for t in proto.graph.initializer) else torch.float64
    x = torch.rand((samples,) + tuple(shape), generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64) * 2 - 1
    with torch.no_grad():
        ref = onnx_evaluate(proto, to_torch_batch(x, shape).to(dtype)).to(torch.float64)
    ref = from_torch_batch(ref, _plan(model, shape)[0])
    err = relative_error(forward(model, x.reshape(samples, -1), shape), ref)
    if data_path:
        with h5py.File(data_path, "w") as f:
            f.create_dataset("input", data=x.reshape(samples, -1).numpy())
            f.create_dataset("output", data=ref.numpy())
    return model, shape, err


def _onnx_resize(x, scales, sizes, a):
    """ONNX Resize as its specification defines it, axis by axis (not with PyTorch's interpolate): the modes nearest
    (coordinate_transformation_mode asymmetric, nearest_mode floor) and linear (half_pixel, neighbours clamped to the
    edges), which torch.onnx.export gives nn.Upsample"""
    mode, ctm = a.get("mode", b"nearest"), a.get("coordinate_transformation_mode", b"half_pixel")
    if mode not in (b"nearest", b"linear") or ctm not in (b"asymmetric", b"half_pixel", b"pytorch_half_pixel") or (mode == b"nearest" and a.get("nearest_mode", b"round_prefer_floor") != b"floor"):
        raise NotImplementedError(f"onnx_evaluate: Resize with mode {mode}, coordinate_transformation_mode {ctm}, nearest_mode {a.get('nearest_mode')}")
    y = x
    for axis in range(2, x.dim()):
        n = x.shape[axis]
        s = float(scales[axis]) if scales is not None and scales.numel() else float(sizes[axis]) / n
        m = int(math.floor(n * s))
        o = torch.arange(m, dtype=torch.float64)
        src = o / s if ctm == b"asymmetric" else (o + 0.5) / s - 0.5
        view = [1] * x.dim()
        view[axis] = m
        if mode == b"nearest":
            y = y.index_select(axis, torch.floor(src).clamp(0, n - 1).long())
        else:
            src = src.clamp(0, n - 1)
            i0 = torch.floor(src).long()
            w1 = (src - i0).reshape(view)
            y = y.index_select(axis, i0) * (1 - w1) + y.index_select(axis, (i0 + 1).clamp(max=n - 1)) * w1
    return y


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--after")
    p.add_argument("--rtol", type=float, default=1e-12)
    p = sub.add_parser("export")
    p.add_argument("spec")
    p.add_argument("input_shape")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--train", action="store_true")
    p = sub.add_parser("onnx")
    p.add_argument("model")
    p.add_argument("onnx")
    p.add_argument("--opset", type=int, default=13)
    p = sub.add_parser("onnx-import")
    p.add_argument("onnx")
    p.add_argument("model")
    p.add_argument("--data")
    p.add_argument("--samples", type=int, default=5)
    p = sub.add_parser("selftest")
    p.add_argument("petnet_prefix")
    p.add_argument("torch_prefix")
    args, _ = parser.parse_known_args()  # the test runner appends PETSc options: ignore them
    if args.command == "check":
        ok = check(args.model, args.data, args.rtol, args.after)
    elif args.command == "export":
        export(args.spec, parse_shape(args.input_shape), args.model, args.data, args.seed, args.samples, args.train)
        ok = True
    elif args.command == "onnx":
        proto = export_onnx(args.model, args.onnx, args.opset)
        model, shape = load(args.model)
        x = to_torch_batch(torch.rand((4,) + tuple(shape), generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2 - 1, shape)
        with torch.no_grad():
            err = relative_error(onnx_evaluate(proto, x).numpy(), model(x).numpy())
        print(f"{args.onnx}: ONNX opset {args.opset}, {len(proto.graph.node)} nodes ({', '.join(sorted({n.op_type for n in proto.graph.node}))}), "
              f"onnx.checker: ok; the graph evaluated node by node (onnx_evaluate) vs the PyTorch model on 4 random samples: max |diff| / max |y| = {err:.1e} (<= 1e-9)")
        ok = err <= 1e-9  # ONNX float attributes are float32: LeakyRelu's alpha, BatchNormalization's epsilon
    elif args.command == "onnx-import":
        model, shape, err = import_onnx(args.onnx, args.model, args.data, args.samples)
        ok = err <= 1e-6
        print(f"{args.model}: from {args.onnx} on {shape_to_string(shape)}: '{spec_of(model)}'; PyTorch on the imported model vs the ONNX graph "
              f"evaluated node by node: max |diff| / max |y| = {err:.1e} ({'<=' if ok else '>'} 1e-6)" + (f"; input and the ONNX output in {args.data}" if args.data else ""))
    else:
        ok = selftest(args.petnet_prefix, args.torch_prefix)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
