#!/usr/bin/python3
"""PetNet's attention:H[:causal] <-> PyTorch's nn.MultiheadAttention(E, H, batch_first=True), suite tests/torch.suite:

1. PetNet -> PyTorch: the files torch_attention_write* wrote (bin/tests/test_transformer -attention_torch: a Net with
   attention layers, causal and not, H = 1 to 8, saved by NetSave(), and PFX_grad.h5 with its input x, output y, and
   the input cotangent dx and parameter gradient of 0.5 |y|^2) load through share/python/petnet_torch.py as an
   nn.Sequential of SelfAttention (nn.MultiheadAttention called as mha(x, x, x), attn_mask above the diagonal when
   causal), tanh/gelu and a Linear on the flattened (T, E); PyTorch's output, input gradient and parameter gradient
   (autograd in float64, model.parameters() in order: in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias,
   ...) equal PetNet's to 1e-10 (max |diff| / max |ref|). The file's tensors also load with load_state_dict(strict=True)
   into a plain nn.MultiheadAttention (which gives the same output; for a rotary layer, attention:H:rotary, an output
   that differs: the rotation is not a no-op).
2. PyTorch -> PetNet: an nn.Sequential of SelfAttention modules with random weights saved by petnet_torch.save with its
   input and PyTorch's output; torch_attention_import_* load it in PetNet and compare (test_io -torch_import_models).
3. A bare nn.MultiheadAttention (three inputs) is refused with a message naming the wrapper.
The runner may append PETSc options: they are ignored."""
import os
import sys

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "share", "python"))
import petnet_torch as pt  # noqa: E402

nn = torch.nn
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out") + "/"
ok = True


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# 1. PetNet -> PyTorch: output and gradients
for case in ("torch_attention", "torch_attention_causal", "torch_attention_rotary"):
    model, shape = pt.load(f"{out}{case}.h5")
    with h5py.File(f"{out}{case}_grad.h5", "r") as f:
        x, y, dx, g = (f[k][...] for k in ("x", "y", "dx", "grad"))
    n = x.size // int(np.prod(shape))
    xt = torch.tensor(x.reshape((n,) + tuple(shape)), dtype=torch.float64, requires_grad=True)
    model.eval()
    yt = model(xt)
    (0.5 * (yt * yt).sum()).backward()
    gt = torch.cat([p.grad.reshape(-1) for p in model.parameters()]).numpy()
    errs = (rel(yt.detach().numpy().reshape(-1), y), rel(xt.grad.numpy().reshape(-1), dx), rel(gt, g))
    good = max(errs) <= 1e-10 and gt.size == g.size
    print(f"{case}: {pt.spec_of(model)} on {n} x {shape}: PyTorch float64 vs PetNet: output {errs[0]:.2e}, input gradient {errs[1]:.2e}, "
          f"parameter gradient {errs[2]:.2e} ({'<=' if good else '>'} 1e-10)")
    ok = ok and good
    # the file's tensors in a plain nn.MultiheadAttention
    with h5py.File(f"{out}{case}.h5", "r") as f:
        E = shape[1]
        mha = nn.MultiheadAttention(E, model[0].num_heads, batch_first=True, dtype=torch.float64)
        mha.load_state_dict({k: torch.from_numpy(f[f"0.{k}"][...]) for k in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")}, strict=True)
        mask = torch.triu(torch.ones(shape[0], shape[0], dtype=torch.bool), 1) if model[0].causal else None
        with torch.no_grad():
            err = rel(mha(xt, xt, xt, attn_mask=mask, need_weights=False)[0].numpy(), model[0](xt).detach().numpy())
        if model[0].rotary:
            good = err >= 1e-3
            print(f"{case}: layer 0's tensors in a plain nn.MultiheadAttention (strict load): another output without the rotation ({err:.1e} {'>=' if good else '<'} 1e-3)")
        else:
            good = err <= 1e-14
            print(f"{case}: layer 0's tensors in a plain nn.MultiheadAttention (strict load): the same output ({err:.1e})")
        ok = ok and good

# 2. PyTorch -> PetNet
model = nn.Sequential(pt.SelfAttention(8, 2, dtype=torch.float64), nn.Tanh(), pt.SelfAttention(8, 4, causal=True, dtype=torch.float64), nn.Tanh(),
                      pt.SelfAttention(8, 2, causal=True, rotary=True, dtype=torch.float64))
pt._randomize(model.double(), 5)
pt.export_model(model, (6, 8), f"{out}torch_attention_from.h5", f"{out}torch_attention_from_data.h5", seed=5, samples=4)
print(f"{out}torch_attention_from.h5: '{pt.spec_from_sequential(model)}' written with its input and PyTorch's output")

# 3. refused
try:
    pt.spec_from_sequential(nn.Sequential(nn.MultiheadAttention(8, 2, batch_first=True)))
    print("nn.MultiheadAttention: accepted, but it takes three inputs")
    ok = False
except ValueError as e:
    good = "SelfAttention" in str(e)
    print(f"nn.MultiheadAttention: refused: {e}{'' if good else ' (lacks: SelfAttention)'}")
    ok = ok and good
sys.exit(0 if ok else 1)
