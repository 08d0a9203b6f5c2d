#!/bin/sh
# PyTorch reference check of PetNet's HDF5 model files (suite line io_torch_check, after the io_torch_*write lines):
#   1. PyTorch (float64) loads tests/out/io_torch.h5 written by NetSave() and must reproduce PetNet's output
#      in tests/out/io_torch_data.h5 to 1e-12 relative; the same for each convolutional model io_torch_<case>.h5
#      (conv2d, conv3d, 2-D and 3-D pools, batchnorm, dropout, residual blocks), in evaluation mode and, where PetNet recorded one, a
#      training-mode pass and the running statistics after it (io_torch_<case>_after.h5);
#   2. models made in PyTorch (standard modules and petnet_torch.Residual) are saved to tests/out/io_from_torch*.h5
#      (+ _data.h5, _after.h5) for io_torch_import_* to load in PetNet; each must read back into PyTorch unchanged.
# Fails (does not skip) without PyTorch or h5py: CI installs python3-torch and python3-h5py.
# The runner appends PETSc options (-malloc_debug ...): they are ignored.
cd "$(dirname "$0")/.." || exit 2
# petnet_torch is imported as a user would, through PYTHONPATH (docs/manual/saving-loading.md, "For PyTorch users")
PYTHONPATH=share/python exec /usr/bin/python3 - <<'EOF'
import sys

import numpy as np
import torch
import h5py
import petnet_torch as pt

nn = torch.nn
out = "tests/out/"
ok = pt.selftest(out + "io_torch", out + "io_from_torch")

# 1. PetNet -> PyTorch: the files of the io_torch_<case>_write suite lines
for case in ("cnn", "convs", "norm", "train", "residual", "cnn3d", "cnn3d_gap", "maxpool_dilation"):
    ok = pt.check(f"{out}io_torch_{case}.h5", f"{out}io_torch_{case}_data.h5", 1e-12) and ok

# Format version 3 holds every tensor in PyTorch's layout: the file's datasets, as they are, into the state_dict
# (load_state_dict(strict=True)) give PetNet's outputs. A file of version 2 (PetNet's layout, tests/data/v2/) read the
# same naive way must give a different network, or this check could not catch a wrong layout.
for path, data, v3 in ((out + "io_torch_cnn.h5", out + "io_torch_cnn_data.h5", True), ("tests/data/v2/cnn_bn.h5", "tests/data/v2/cnn_bn_data.h5", False)):
    model, shape = pt.load(path)
    with h5py.File(path) as f:
        sd = {k: torch.from_numpy(f[k][...].reshape(v.shape)) for k, v in model.state_dict().items() if k in f}
    model.load_state_dict(sd, strict=v3)
    with h5py.File(data) as f:
        x, ref = f["input"][...], f["output"][...]
    naive = pt.relative_error(pt.forward(model, x, shape), ref)
    print(f"{path} read naively (each dataset reshaped to its state_dict entry): max |diff| / max |y| = {naive:.2e} (must be {'<= 1e-12' if v3 else '> 1e-3'})")
    ok = ok and (naive <= 1e-12 if v3 else naive > 1e-3)

# 2. PyTorch -> PetNet: models written as a PyTorch user would, saved with random weights and running statistics
cases = {
    "cnn": ((28, 28, 1), False, nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 32), nn.ReLU(), nn.Linear(32, 10))),
    "convs": ((13, 12, 4), False, nn.Sequential(
        nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.Tanh(), nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=2), nn.ReLU(),
        nn.Conv2d(6, 4, (2, 3), padding=(0, 1), bias=False), nn.LeakyReLU(0.1), nn.Conv2d(4, 4, 1, groups=2),
        nn.MaxPool2d(3, 2, 1), nn.AvgPool2d((2, 1), stride=1, padding=(1, 0)), nn.Flatten(), nn.Linear(48, 5))),
    "norm": ((9, 9, 3), False, nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.AvgPool2d(3, 2, 1), nn.Dropout(0.3), nn.Conv2d(6, 8, 3),
        nn.BatchNorm2d(8, eps=1e-3, momentum=0.2), nn.GELU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 7),
        nn.BatchNorm1d(7), nn.Softplus(), nn.Linear(7, 3))),
    "train": ((6, 6, 2), True, pt.build_sequential(
        "conv2d:5:3:1:1,batchnorm,relu,avgpool:2,flatten,batchnorm:0.3,leakyrelu:0.05,dense:6,batchnorm,sigmoid,dense:3", (6, 6, 2))),
    "residual": ((10, 10, 3), True, nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(),
        pt.Residual([nn.Conv2d(6, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.Conv2d(6, 6, 3, padding=1)]), nn.ReLU(),
        pt.Residual([nn.Conv2d(6, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1)], [nn.Conv2d(6, 8, 1, 2), nn.BatchNorm2d(8)]),
        pt.Residual([pt.Residual([nn.Conv2d(8, 8, 3, padding=1), nn.Tanh()])]), nn.Flatten(),
        pt.Residual([nn.BatchNorm1d(200), nn.ReLU()]), nn.Linear(200, 8),
        pt.Residual([nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8)], [nn.Linear(8, 8)]), nn.Identity(),
        nn.Linear(8, 4))),
}


class Module(nn.Module):  # an nn.Module subclass, as PyTorch users write them: torch.fx traces its forward into a chain
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc1, self.fc2 = nn.Linear(4 * 3 * 3, 6), nn.Linear(6, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        return self.fc2(torch.tanh(self.fc1(torch.flatten(x, 1))))


cases["module"] = ((6, 6, 2), True, Module())
# volumes (d, h, w, c): Conv3d (padding='same', strided, anisotropic, dilated, grouped, no bias), BatchNorm3d, MaxPool3d,
# AvgPool3d with padding, AdaptiveAvgPool3d(1) + Flatten, and a Linear after a flattened volume ((c, d, h, w) order)
cases["cnn3d"] = ((5, 6, 4, 2), True, nn.Sequential(
    nn.Conv3d(2, 4, 3, padding="same"), nn.BatchNorm3d(4), nn.ReLU(), nn.MaxPool3d(2, 1, 1),
    nn.Conv3d(4, 6, (3, 1, 2), stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 1, 2), groups=2, bias=False), nn.Tanh(),
    nn.AvgPool3d((2, 2, 1), stride=1, padding=(1, 0, 0)), nn.Flatten(), nn.Linear(6 * 5 * 6 * 4, 5)))
cases["gap3d"] = ((4, 4, 4, 3), False, nn.Sequential(
    nn.Conv3d(3, 6, 3, stride=2, padding=1), nn.BatchNorm3d(6, eps=1e-3, momentum=0.2), nn.GELU(), nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(6, 3)))
for seed, (case, (shape, train, model)) in enumerate(cases.items()):
    prefix = f"{out}io_from_torch_{case}"
    model = pt._randomize(model.double(), seed)
    pt.export_model(model, shape, prefix + ".h5", prefix + "_data.h5", seed=seed, samples=10, train=train)
    ok = pt.round_trip(model, shape, prefix + "_again.h5") and ok
    print(f"{prefix}.h5: '{pt.spec_from_sequential(model)}' on {pt.shape_to_string(shape)}{' (+ training-mode pass)' if train else ''}")

# load_into(): a file into the user's own module, under its own state_dict names
mine = Module().double()
pt.load_into(mine, f"{out}io_from_torch_module_after.h5")  # the state after export_model()'s training pass
same = all(torch.equal(a, b) for a, b in zip(mine.state_dict().values(), cases["module"][2].state_dict().values()))
print(f"{out}io_from_torch_module_after.h5 loaded into a fresh Module with load_into(): {'the same state_dict' if same else 'DIFFERS'}")
ok = ok and same

# Models PetNet cannot represent are refused with a message saying what to change, not saved wrong.
refused = {
    "Conv2d(padding_mode='reflect')": (nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")), (5, 5, 2)),
    "AvgPool2d(count_include_pad=False)": (nn.Sequential(nn.AvgPool2d(3, 2, 1, count_include_pad=False)), (5, 5, 2)),
    "MaxPool2d(ceil_mode=True)": (nn.Sequential(nn.MaxPool2d(2, ceil_mode=True)), (5, 5, 2)),
    "Linear on NCHW data": (nn.Sequential(nn.Conv2d(2, 3, 3), nn.Linear(27, 4)), (5, 5, 2)),
    "BatchNorm1d on (h, w, c)": (nn.Sequential(nn.BatchNorm1d(2)), (5, 5, 2)),
    "residual: F after flatten, P dense": (nn.Sequential(nn.Flatten(), pt.Residual([nn.ReLU()], [nn.Linear(50, 50)])), (5, 5, 2)),
    "Conv2d(padding='same') with an even kernel": (nn.Sequential(nn.Conv2d(2, 3, 2, padding="same")), (5, 5, 2)),
    "Conv3d(padding_mode='circular')": (nn.Sequential(nn.Conv3d(2, 3, 3, padding=1, padding_mode="circular")), (5, 5, 5, 2)),
    "Conv3d on (h, w, c)": (nn.Sequential(nn.Conv3d(2, 3, 1)), (5, 5, 2)),
    "BatchNorm2d on (d, h, w, c)": (nn.Sequential(nn.BatchNorm2d(2)), (3, 5, 5, 2)),
    "MaxPool3d(ceil_mode=True)": (nn.Sequential(nn.MaxPool3d(2, ceil_mode=True)), (5, 5, 5, 2)),
    "a module whose forward calls torch.sin": (type("Sine", (nn.Module,), {"__init__": lambda self: (nn.Module.__init__(self), setattr(self, "fc", nn.Linear(4, 4)))[0],
                                                                            "forward": lambda self, x: torch.sin(self.fc(x))})(), (4,)),
}
# a skip connection in a module's forward is a graph now (tests/torch_graph.py tests graphs in full)
skip = type("Skip", (nn.Module,), {"__init__": lambda self: (nn.Module.__init__(self), setattr(self, "fc", nn.Linear(4, 4)))[0],
                                   "forward": lambda self, x: x + self.fc(x)})().double()
pt.save(skip, (4,), out + "io_from_torch_skip.h5")
spec = pt.spec_of(pt.load(out + "io_from_torch_skip.h5")[0])
print(f"a module with a skip connection in its forward: saved as the graph '{spec}'")
ok = ok and spec == "fc = dense:4 <- input; add = add <- input, fc;"
for what, (model, shape) in refused.items():
    try:
        pt.save(model.double(), shape, out + "io_from_torch_refused.h5")
        print(f"{what}: saved, but PetNet has no equivalent")
        ok = False
    except ValueError as e:
        print(f"{what}: refused ({e})")
sys.exit(0 if ok else 1)
EOF
