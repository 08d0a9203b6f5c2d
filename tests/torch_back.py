#!/usr/bin/python3
"""PyTorch -> PetNet model files for transformers (issue 32, "and back"). Usage: tests/torch_back.py encoder|charlm

encoder (suite tests/torch.suite):
1. PyTorch -> PetNet: an nn.Sequential of nn.TransformerEncoderLayer(8, 2, 12, dropout=0, activation="gelu",
   batch_first=True, norm_first=True), petnet_torch.CausalEncoderLayer(8, 4, 16) and nn.LayerNorm(8), and an
   nn.TransformerEncoder of two such layers with its norm, every weight random (uniform, biases and norms too), saved by
   petnet_torch.save() as transformer:H:F[:causal] entries with a random batch of (5, 8) samples and PyTorch's
   output: tests/out/torch_encoder_from*.h5, which torch_encoder_import_* load in PetNet and compare (to 1e-12).
2. PetNet -> PyTorch: the file torch_encoder_write wrote (NetSave() of transformer:2:12,transformer:4:16:causal,
   layernorm) through encoder_state_dict() into a plain nn.TransformerEncoder with load_state_dict(strict=True): its
   output equals PetNet's to 1e-12 (max |diff| / max |y|).
3. Refused, naming what to write instead: a post-norm layer (norm_first), a ReLU layer (activation), dropout.
charlm (suite tests/charlm.suite): petnet_torch.charlm_save() refuses, naming the key, a state_dict of
share/bench/charlm_torch.py's GPT with a key missing, a tensor of another shape, a key the model lacks, and heads that do
not divide E; then writes, bypassing those checks (petnet_torch._write), files with a dataset missing and one of another
shape, for charlm_from_torch_*_error: bin/charlm must refuse them naming the dataset.
The runner may append PETSc options: they are ignored."""
import os
import sys

import h5py
import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "share", "python"))
sys.path.insert(0, os.path.join(here, "..", "share", "bench"))
import petnet_torch as pt  # noqa: E402

nn = torch.nn
out = os.path.join(here, "out") + "/"
os.makedirs(out, exist_ok=True)


def randomize(model, seed):
    """every parameter uniform (norm weights around 1), so that a tensor loaded into the wrong place shows"""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            scale = 1.0 / np.sqrt(p.shape[-1]) if p.dim() > 1 else 0.3
            p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale + (1.0 if name.endswith("weight") and p.dim() == 1 else 0.0))
    return model.eval()


def refused(what, call, phrase):
    """call() must raise a ValueError or KeyError whose text holds phrase"""
    try:
        call()
    except (ValueError, KeyError) as e:
        good = phrase in str(e)
        print(f"{what}: refused: {e}" + ("" if good else f" (lacks: {phrase})"))
        return good
    print(f"{what}: accepted, but it must be refused")
    return False


def encoder():
    ok = True
    layer = dict(dropout=0.0, activation="gelu", batch_first=True, norm_first=True, dtype=torch.float64)
    # 1. PyTorch -> PetNet
    model = randomize(nn.Sequential(nn.TransformerEncoderLayer(8, 2, 12, **layer), pt.encoder_layer(8, 4, 16, causal=True), nn.LayerNorm(8, dtype=torch.float64)), 7)
    pt.export_model(model, (5, 8), f"{out}torch_encoder_from.h5", f"{out}torch_encoder_from_data.h5", seed=7, samples=6)
    print(f"{out}torch_encoder_from.h5: '{pt.spec_of(model)}' written with its input and PyTorch's output")
    stack = randomize(nn.Sequential(nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 4, 24, **layer), 2, norm=nn.LayerNorm(8, dtype=torch.float64))), 8)
    pt.export_model(stack, (5, 8), f"{out}torch_encoder_from_stack.h5", f"{out}torch_encoder_from_stack_data.h5", seed=8, samples=6)
    print(f"{out}torch_encoder_from_stack.h5: nn.TransformerEncoder as '{pt.spec_of(stack)}' written with its input and PyTorch's output")
    ok = ok and pt.spec_of(model) == "transformer:2:12,transformer:4:16:causal,layernorm" and pt.spec_of(stack) == "transformer:4:24,transformer:4:24,layernorm"

    # 2. PetNet -> a plain nn.TransformerEncoder, strict load
    state, sizes, shape = pt.encoder_state_dict(f"{out}torch_encoder.h5")
    T, E = shape
    enc = nn.TransformerEncoder(pt.encoder_layer(E, sizes[0][0], sizes[0][1]), len(sizes), norm=nn.LayerNorm(E, dtype=torch.float64), enable_nested_tensor=False)
    for i, (H, F, causal) in enumerate(sizes):
        enc.layers[i] = pt.encoder_layer(E, H, F, causal)
    enc.load_state_dict(state, strict=True)
    enc.eval()
    with h5py.File(f"{out}torch_encoder_data.h5", "r") as f:
        x, y = f["input"][...], f["output"][...]
    with torch.no_grad():
        err = pt.relative_error(enc(torch.from_numpy(x.reshape(-1, T, E))).numpy(), y)
    good = err <= 1e-12 and sizes == [(2, 12, False), (4, 16, True)]
    print(f"{out}torch_encoder.h5 (PetNet's): blocks {sizes} in a plain nn.TransformerEncoder (load_state_dict strict): max |diff| / max |y| = {err:.1e} ({'<=' if good else '>'} 1e-12)")
    ok = ok and good

    # 3. refusals
    for what, kw, phrase in (("post-norm layer", dict(norm_first=False), "norm_first=True"), ("ReLU layer", dict(activation="relu"), 'activation="gelu"'),
                             ("dropout 0.1", dict(dropout=0.1), "dropout=0.0")):
        bad = nn.Sequential(nn.TransformerEncoderLayer(8, 2, 12, **{**layer, **kw}))
        ok = refused(f"nn.TransformerEncoderLayer with a {what}", lambda: pt.save(bad, (5, 8), f"{out}torch_encoder_bad.h5"), phrase) and ok
    return ok


def charlm():
    import charlm_torch as ct

    ok = True
    V, P, E, H, L = 114, 32, 16, 4, 2  # V: the fortunes corpus's vocabulary (bin/charlm refuses another)
    model = randomize(ct.GPT(V, P, E, H, L).to(torch.float64), 3)
    good = model.state_dict()
    path = f"{out}charlm_from_torch_bad.h5"

    def without(key):
        return {k: v for k, v in good.items() if k != key}

    def replaced(key, value):
        return {**good, key: value}

    ok = refused("a state_dict without transformer.h.1.mlp.c_proj.bias", lambda: pt.charlm_save(without("transformer.h.1.mlp.c_proj.bias"), path, H), "'transformer.h.1.mlp.c_proj.bias'") and ok
    ok = refused("in_proj_weight transposed", lambda: pt.charlm_save(replaced("transformer.h.0.attn.in_proj_weight", good["transformer.h.0.attn.in_proj_weight"].t()), path, H),
                 "'transformer.h.0.attn.in_proj_weight' has shape (16, 48), but the model (V=114, E=16, F=64) needs (48, 16)") and ok
    ok = refused("a key bin/charlm's model lacks", lambda: pt.charlm_save(replaced("transformer.h.0.attn.bias_k", torch.zeros(1, 1, E)), path, H), "'transformer.h.0.attn.bias_k'") and ok
    ok = refused("heads 3 on E 16", lambda: pt.charlm_save(good, path, 3), "dividing the embedding width E = 16") and ok
    ok = refused("a context longer than wpe", lambda: pt.charlm_save(good, path, H, context=64), "position table's 32 rows") and ok

    # files only a careless writer makes: bin/charlm must name the dataset (charlm_from_torch_*_error)
    spec, shape = pt.charlm_save(good, f"{out}charlm_from_torch_good.h5", H)
    with h5py.File(f"{out}charlm_from_torch_good.h5", "r") as f:
        datasets = {k: f[k][...] for k in f if k != pt.GROUP}
    for name, drop, reshape in (("missing", "3.mlp.res.3.bias", None), ("shape", None, "2.attn.res.1.in_proj_weight")):
        sets = [(k, (v.T.copy() if k == reshape else v), (v.T if k == reshape else v).shape) for k, v in datasets.items() if k != drop]
        pt._write(f"{out}charlm_from_torch_{name}.h5", spec, shape, sets, sum(v.size for v in datasets.values()), 0)  # the header's count is right
        print(f"{out}charlm_from_torch_{name}.h5: {'without ' + drop if drop else reshape + ' transposed'}")
    return ok


if __name__ == "__main__":
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    if case not in ("encoder", "charlm"):
        sys.exit("usage: tests/torch_back.py encoder|charlm")
    sys.exit(0 if (encoder() if case == "encoder" else charlm()) else 1)
