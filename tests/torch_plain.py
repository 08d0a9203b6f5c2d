#!/usr/bin/python3
"""What a PyTorch user does with a PetNet model file, with h5py and torch only (petnet_torch.py is NOT imported):

1. PetNet -> PyTorch: the files NetSave() wrote (suite lines torch_plain_write_*: tests/out/torch_plain_<case>.h5 and
   _data.h5 with the input [n][h*w*c], channels last, and PetNet's logits) are loaded into hand-written nn.Sequential
   models with
       sd = {k: torch.from_numpy(f[k][...]) for k in f if k != "petnet"}
       model.load_state_dict(sd, strict=True)
   and the logits must agree to 1e-12 relative: evaluation mode, and for the batchnorm model one training-mode pass
   (batch statistics) and the state after it (running statistics, num_batches_tracked) against PetNet's
   torch_plain_cnn_after.h5.
2. PyTorch -> PetNet: the same CNN trained for three forward passes in PyTorch (running statistics, num_batches_tracked
   = 3), its state_dict written with h5py beside the group /petnet NetLoad() needs (version 3, spec, input_shape,
   nparams, nbuffers) and a crc32 per tensor, to tests/out/torch_plain_from_cnn.h5; its input and logits to _data.h5.
   torch_plain_import_* load it in PetNet and compare (bin/tests/test_io -torch_import_models).
The runner may append PETSc options: they are ignored."""
import os
import sys
import zlib

import h5py
import numpy as np
import torch

nn = torch.nn
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out") + "/"


def cnn():  # PetNet: conv2d:6:3:1:1,batchnorm,relu,maxpool:2,flatten,dense:16,batchnorm,relu,dense:5 on 8x8x3
    return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(6 * 4 * 4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5)).double()


def groups():  # PetNet: conv2d:4:3:2:1,relu,conv2d:6:3:1:1:groups=2,tanh,flatten,dense:5 on 9x9x2
    return nn.Sequential(nn.Conv2d(2, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(4, 6, 3, padding=1, groups=2), nn.Tanh(),
                         nn.Flatten(), nn.Linear(6 * 5 * 5, 5)).double()


def load(model, path):
    with h5py.File(path, "r") as f:
        sd = {k: torch.from_numpy(f[k][...]) for k in f if k != "petnet"}
    model.load_state_dict(sd, strict=True)
    return model


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


ok = True
for case, make, shape in (("cnn", cnn, (8, 8, 3)), ("groups", groups, (9, 9, 2))):
    prefix = out + "torch_plain_" + case
    model = load(make(), prefix + ".h5").eval()
    with h5py.File(prefix + "_data.h5", "r") as f:
        x = torch.from_numpy(f["input"][...]).reshape((-1,) + shape).permute(0, 3, 1, 2)  # channels last -> NCHW
        y, y_train = f["output"][...], f["output_train"][...] if "output_train" in f else None
    with torch.no_grad():
        err = rel(model(x).numpy(), y)
    print(f"{prefix}.h5: PyTorch (h5py + load_state_dict(strict=True)) vs PetNet, evaluation mode: max |diff| / max |y| = {err:.2e}")
    ok = ok and err <= 1e-12
    if y_train is not None:
        model.train()
        with torch.no_grad():
            err = rel(model(x).numpy(), y_train)
        after = load(make(), prefix + "_after.h5").state_dict()
        state = max(rel(v.double().numpy(), after[k].double().numpy()) for k, v in model.state_dict().items())
        counts = {k: int(v) for k, v in after.items() if k.endswith("num_batches_tracked")}
        print(f"{prefix}.h5: training mode: max |diff| / max |y| = {err:.2e}; state after the pass vs PetNet's: {state:.2e}; PetNet's num_batches_tracked {counts}")
        ok = ok and err <= 1e-12 and state <= 1e-12 and set(counts.values()) == {1}

# 2. PyTorch -> PetNet
torch.manual_seed(5)
model = cnn()
with torch.no_grad():
    for p in model.parameters():
        p.add_(0.1 * torch.randn_like(p))
    model.train()
    for _ in range(3):
        model(torch.randn(7, 3, 8, 8, dtype=torch.float64) * 2 + 0.5)
    model.eval()
    x = torch.rand(6, 3, 8, 8, dtype=torch.float64) * 3 - 1.5
    y = model(x)
prefix = out + "torch_plain_from_cnn"
sd = model.state_dict()
with h5py.File(prefix + ".h5", "w") as f:
    g = f.create_group("petnet")
    g.attrs["version"] = np.int32(3)
    g.attrs["spec"] = np.bytes_("conv2d:6:3:1:1,batchnorm,relu,maxpool:2,flatten,dense:16,batchnorm,relu,dense:5")
    g.attrs["input_shape"] = np.bytes_("8x8x3")  # one sample, channels last (h x w x c)
    g.attrs["nparams"] = np.int32(sum(p.numel() for p in model.parameters()))
    g.attrs["nbuffers"] = np.int32(sum(v.numel() for k, v in sd.items() if k.endswith(("running_mean", "running_var"))))
    for k, v in sd.items():
        d = f.create_dataset(k, data=v.numpy())
        d.attrs["crc32"] = np.bytes_(f"{zlib.crc32(v.numpy().astype('<f8').tobytes()):08x}")
with h5py.File(prefix + "_data.h5", "w") as f:
    f["input"] = x.permute(0, 2, 3, 1).reshape(6, -1).numpy()  # NCHW -> channels last, one sample a row
    f["output"] = y.numpy()
    f.attrs["num_batches_tracked"] = np.int32(3)
print(f"{prefix}.h5: PyTorch state_dict written with h5py ({len(sd)} tensors, num_batches_tracked 3)")
sys.exit(0 if ok else 1)
