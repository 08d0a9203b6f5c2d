#!/usr/bin/python3
"""PetNet's layernorm <-> PyTorch's nn.LayerNorm through model files (share/python/petnet_torch.py), suite
tests/torch.suite:

1. PetNet -> PyTorch: the file torch_layernorm_write wrote (layernorm with and without affine parameters and with its
   own epsilon, on features and on (T, E) tokens) loads as an nn.Sequential whose outputs equal PetNet's to 1e-12
   (petnet_torch.check), and re-saved by PyTorch it reads back unchanged.
2. PyTorch -> PetNet: nn.LayerNorm(E), LayerNorm(E, eps=1e-3, elementwise_affine=False) between Linear layers, with
   random weights, saved to tests/out/torch_layernorm_from.h5 with its input and output; torch_layernorm_import_* load
   it in PetNet and compare (bin/tests/test_io -torch_import_models).
3. What PetNet cannot represent is refused with a message: a LayerNorm over more than the last dimension.
The runner may append PETSc options: they are ignored."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "share", "python"))
import petnet_torch as pt  # noqa: E402

nn = torch.nn
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out") + "/"
ok = True

# 1. PetNet -> PyTorch
for case in ("torch_layernorm", "torch_layernorm_tokens"):
    ok = pt.check(f"{out}{case}.h5", f"{out}{case}_data.h5", 1e-12) and ok
    model, shape = pt.load(f"{out}{case}.h5")
    ok = pt.round_trip(model, shape, f"{out}{case}_again.h5") and ok

# 2. PyTorch -> PetNet
model = nn.Sequential(nn.Linear(10, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, 4), nn.LayerNorm(4, eps=1e-3, elementwise_affine=False), nn.Linear(4, 3))
pt._randomize(model.double(), 7)
pt.export_model(model, (10,), f"{out}torch_layernorm_from.h5", f"{out}torch_layernorm_from_data.h5", seed=7, samples=6)
print(f"{out}torch_layernorm_from.h5: '{pt.spec_from_sequential(model)}' written with its input and PyTorch's output")

# 3. refused
try:
    pt.spec_from_sequential(nn.Sequential(nn.LayerNorm((3, 4))))
    print("LayerNorm((3, 4)): accepted, but PetNet normalises the last dimension only")
    ok = False
except ValueError as e:
    good = "last dimension" in str(e)
    print(f"LayerNorm((3, 4)): refused: {e}{'' if good else ' (lacks: last dimension)'}")
    ok = ok and good
sys.exit(0 if ok else 1)
