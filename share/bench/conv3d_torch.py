#!/usr/bin/python3
"""The layer of bin/bench_conv3d in PyTorch: Conv3d(cin, cout, K, padding=K//2) on a batch of S^3 volumes, float64 and
float32, forward and backward (dW, db and dx) timed separately (best of the repetitions), GFLOP/s counted as there
(2 N S^3 K^3 cin cout per GEMM pass: forward one, backward two). One line per dtype, as make bench prints them."""
import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=1)
p.add_argument("--size", type=int, default=32)
p.add_argument("--cin", type=int, default=4)
p.add_argument("--cout", type=int, default=16)
p.add_argument("--kernel", type=int, default=3)
p.add_argument("--batch", type=int, default=4)
p.add_argument("--repeat", type=int, default=5)
a = p.parse_args()
torch.set_num_threads(a.threads)
flops = 2.0 * a.batch * a.size**3 * a.kernel**3 * a.cin * a.cout
for dtype in (torch.float64, torch.float32):
    torch.manual_seed(0)
    conv = torch.nn.Conv3d(a.cin, a.cout, a.kernel, padding=a.kernel // 2, dtype=dtype)
    x = torch.randn(a.batch, a.cin, a.size, a.size, a.size, dtype=dtype, requires_grad=True)
    tf = tb = float("inf")
    for _ in range(a.repeat + 1):
        t0 = time.perf_counter()
        y = conv(x)
        t1 = time.perf_counter()
        y.backward(torch.ones_like(y))
        t2 = time.perf_counter()
        tf, tb = min(tf, t1 - t0), min(tb, t2 - t1)
    name = "torch_float64:" if dtype == torch.float64 else "torch_float32:"
    print(f"{name} threads={a.threads} forward_s={tf:.4f} backward_s={tb:.4f} fwdbwd_s={tf + tb:.4f} fwdbwd_gflops={3 * flops / (tf + tb) / 1e9:.2f}")
