#!/usr/bin/python3
"""PetNet's upsample and convtranspose2d <-> PyTorch's nn.Upsample and nn.ConvTranspose2d through model files
(share/python/petnet_torch.py), suite tests/torch.suite:

1. PetNet -> PyTorch: the files the torch_*_write* lines wrote (a CNN with nearest and bilinear upsampling on
   (h, w, c); trilinear and nearest on (d, h, w, c); a CNN with transposed convolutions) load as nn.Sequential models
   whose outputs equal PetNet's to 1e-12 (petnet_torch.check), and re-saved by PyTorch they read back unchanged.
2. PyTorch -> PetNet: models written as a PyTorch user would (nn.Upsample(scale_factor=2, mode='bilinear',
   align_corners=False), nn.UpsamplingNearest2d, (1, 3) factors, nn.ConvTranspose2d with stride, padding, output
   padding and groups, an nn.Module subclass traced by torch.fx) are saved with random weights to
   tests/out/torch_upsample_from*.h5 with their input and output; torch_upsample_import_* load them in PetNet and
   compare (bin/tests/test_io -torch_import_models).
3. What PetNet cannot represent is refused with a message: size=, align_corners=True, a fractional factor, bicubic.
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
for case in ("torch_upsample", "torch_upsample3d", "torch_convtranspose"):
    ok = pt.check(f"{out}{case}.h5", f"{out}{case}_data.h5", 1e-12) and ok
    model, shape = pt.load(f"{out}{case}.h5")
    ok = pt.round_trip(model, shape, f"{out}{case}_again.h5") and ok


# 2. PyTorch -> PetNet
class Decoder(nn.Module):  # a user's nn.Module: torch.fx traces its forward into a chain of modules
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.conv2 = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.up2 = nn.UpsamplingNearest2d(scale_factor=3)

    def forward(self, x):
        return self.up2(self.conv2(torch.relu(self.up(self.conv1(x)))))


models = {
    "torch_upsample_from": ((5, 4, 2), nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), nn.Tanh(),
        nn.Conv2d(4, 3, 3, padding=1), nn.Upsample(scale_factor=(1, 3)), nn.Conv2d(3, 2, 3, stride=2),
        nn.ConvTranspose2d(2, 3, (2, 3), stride=(2, 1), padding=(0, 1), bias=False), nn.Flatten(), nn.Linear(3 * 8 * 11, 3))),
    "torch_upsample_from_module": ((3, 3, 3), Decoder()),
}
for name, (shape, model) in models.items():
    pt._randomize(model.double(), 5)
    pt.export_model(model, shape, f"{out}{name}.h5", f"{out}{name}_data.h5", seed=5, samples=6)
    print(f"{out}{name}.h5: '{pt.spec_from_sequential(model)}' on {pt.shape_to_string(shape)} written with its input and PyTorch's output")

# 3. refused
for module, words in ((nn.Upsample(size=(4, 4)), "scale_factor, not a size"), (nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), "align_corners=False"),
                      (nn.Upsample(scale_factor=1.5), "integer factors"), (nn.Upsample(scale_factor=2, mode="bicubic"), "nearest or linear")):
    try:
        pt.spec_from_sequential(nn.Sequential(module))
        print(f"{module}: accepted, but PetNet has no such layer")
        ok = False
    except ValueError as e:
        good = words in str(e)
        print(f"{module}: refused: {e}{'' if good else ' (lacks: ' + words + ')'}")
        ok = ok and good
sys.exit(0 if ok else 1)
