#!/usr/bin/python3
"""PetNet's dense:N:tokens <-> PyTorch's nn.Linear on the last dimension (petnet_torch.TokenLinear) through model files,
suite tests/tokens.suite:

1. PetNet -> PyTorch: the file tokens_torch_write wrote (tokens dense layers with and without bias, layernorm and a
   flattening dense on (T, E) = (5, 4) samples) loads as an nn.Sequential of TokenLinear (weight [N][E]) whose outputs
   equal PetNet's to 1e-12 (petnet_torch.check), and re-saved by PyTorch it reads back unchanged.
2. PyTorch -> PetNet: TokenLinear, GELU, LayerNorm, TokenLinear with random weights, saved to tests/out/torch_tokens_from.h5
   with its input and output; tokens_torch_import_* load it in PetNet and compare (bin/tests/test_io -torch_import_models).
3. A plain nn.Linear(E, N) on (T, E) samples is refused with a message naming TokenLinear (it would be ambiguous).
The runner may append PETSc options: they are ignored."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "share", "python"))
import petnet_torch as pt  # noqa: E402

nn = torch.nn
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out") + "/"
ok = pt.check(f"{out}torch_tokens.h5", f"{out}torch_tokens_data.h5", 1e-12)
model, shape = pt.load(f"{out}torch_tokens.h5")
ok = pt.round_trip(model, shape, f"{out}torch_tokens_again.h5") and ok
good = isinstance(model[0], pt.TokenLinear) and tuple(model[0].weight.shape) == (6, 4)
print(f"layer 0: {type(model[0]).__name__} weight {tuple(model[0].weight.shape)} {'(nn.Linear(4, 6) on the last dimension)' if good else '(expected TokenLinear [6][4])'}")
ok = ok and good

model = nn.Sequential(pt.TokenLinear(4, 8), nn.GELU(), nn.LayerNorm(8), pt.TokenLinear(8, 3, bias=False))
pt._randomize(model.double(), 5)
pt.export_model(model, (5, 4), f"{out}torch_tokens_from.h5", f"{out}torch_tokens_from_data.h5", seed=5, samples=6)
print(f"{out}torch_tokens_from.h5: '{pt.spec_from_sequential(model)}' written with its input and PyTorch's output")

try:
    pt.export_model(nn.Sequential(nn.Linear(4, 3)), (5, 4), f"{out}torch_tokens_bad.h5", f"{out}torch_tokens_bad_data.h5")
    print("nn.Linear(4, 3) on (5, 4): accepted, but it is ambiguous")
    ok = False
except ValueError as e:
    good = "TokenLinear" in str(e)
    print(f"nn.Linear(4, 3) on (5, 4): refused: {e}{'' if good else ' (lacks: TokenLinear)'}")
    ok = ok and good
sys.exit(0 if ok else 1)
