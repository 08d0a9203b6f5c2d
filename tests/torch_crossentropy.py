#!/usr/bin/python3
"""PetNet's per-token crossentropy (-loss_ignore_index, -loss_label_smoothing) against PyTorch's
torch.nn.functional.cross_entropy(ignore_index=, label_smoothing=, reduction="mean"), suite tests/tokens.suite.

bin/tests/test_loss -tokens -tokens_dump FILE writes a batch of 5 samples of (T, V) = (4, 7) logits with T labels each
(every third label the ignore index), PetNet's loss, its gradient dY, a direction V and its Hessian product H V. Here
PyTorch computes the loss of the same logits and labels, its gradient by autograd and H V by double backward
(torch.autograd.grad of <dY, V>); all three must agree to 1e-12 relative, for three settings: the default ignore index
-100 without smoothing, ignore index 3 (a class) with smoothing 0.1, and -1 with smoothing 0.25.
The runner may append PETSc options: they are ignored."""
import os
import subprocess
import sys

import torch

top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
out = os.path.join(top, "tests", "out")
os.makedirs(out, exist_ok=True)
ok = True
for ignore, smoothing in ((None, None), (3, 0.1), (-1, 0.25)):
    path = os.path.join(out, "torch_crossentropy.txt")
    cmd = [os.path.join(top, "bin", "tests", "test_loss"), "-tokens", "-tokens_dump", path]
    if ignore is not None:
        cmd += ["-loss_ignore_index", str(ignore), "-loss_label_smoothing", str(smoothing)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        head = f.readline().split()
        N, T, V, I = (int(v) for v in head[:4])
        a, loss = float(head[4]), float(head[5])
        rows = [[float(v) for v in f.readline().split()] for _ in range(N * T * V)]
        labels = [int(float(f.readline())) for _ in range(N * T)]
    y = torch.tensor([r[0] for r in rows], dtype=torch.float64).reshape(N, T, V).requires_grad_(True)
    dY = torch.tensor([r[1] for r in rows], dtype=torch.float64).reshape(N, T, V)
    v = torch.tensor([r[2] for r in rows], dtype=torch.float64).reshape(N, T, V)
    hv = torch.tensor([r[3] for r in rows], dtype=torch.float64).reshape(N, T, V)
    t = torch.tensor(labels).reshape(N, T)
    # PyTorch's class dimension is 1: (N, V, T) logits and (N, T) targets
    ref = torch.nn.functional.cross_entropy(y.permute(0, 2, 1), t, ignore_index=I, label_smoothing=a)
    (g,) = torch.autograd.grad(ref, y, create_graph=True)
    (h,) = torch.autograd.grad((g * v).sum(), y)
    errs = (abs(loss - ref.item()) / abs(ref.item()), ((dY - g).norm() / g.norm()).item(), ((hv - h).norm() / h.norm()).item())
    good = max(errs) <= 1e-12
    ok = ok and good
    print(f"ignore_index {I:4d} label_smoothing {a:.2f}: loss {loss:.12f} (torch {ref.item():.12f}); relative errors loss {errs[0]:.1e}, gradient {errs[1]:.1e}, Hessian product {errs[2]:.1e} {'<=' if good else '>'} 1e-12")
sys.exit(0 if ok else 1)
