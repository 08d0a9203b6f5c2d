#!/usr/bin/env python3
"""oneDNN's GEMM rates on this machine, the ceiling beside OpenBLAS's in make bench (issue 31), through PyTorch 1.13
(Debian's python3-torch is built with oneDNN 2.6, the version of libdnnl-dev): float32 through oneDNN's inner product
(torch._C._nn.mkldnn_linear on mkldnn tensors), bfloat16 through torch.matmul (which PyTorch sends to oneDNN), and
float32 through torch.matmul (PyTorch's BLAS) for comparison, on the shapes of bin/bench_dgemm: 1024^3 and the MLP's
first layer (C 256 x 128 = W 256 x 784 times X 784 x 128). Each rate is the best of --seconds of repeated calls.
One line per shape: onednn: shape=MxNxK threads=T f32_gflops= bf16_gflops= torch_f32_gflops=
A benchmark, not a test: nothing here asserts a rate."""
import argparse
import time

import torch


def rate(fn, flops, seconds):
    fn()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        t1 = time.perf_counter()
        if t1 - t0 >= seconds:
            return flops * n / (t1 - t0) / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=0.3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if not torch.backends.mkldnn.is_available():
        print("onednn: not in this PyTorch (torch.backends.mkldnn.is_available() is False)")
        return
    for m, n, k in ((1024, 1024, 1024), (256, 128, 784)):
        x = torch.randn(n, k)  # the batch, n samples of k features
        w = torch.randn(m, k)  # the weights: y = x w^T, (n x m)
        flops = 2 * m * n * k
        xd, wd = x.to_mkldnn(), w.to_mkldnn()
        f32 = rate(lambda: torch._C._nn.mkldnn_linear(xd, wd, None), flops, a.seconds)
        xb, wtb = x.bfloat16(), w.t().contiguous().bfloat16()
        bf16 = rate(lambda: torch.matmul(xb, wtb), flops, a.seconds)
        wt = w.t().contiguous()
        tf32 = rate(lambda: torch.matmul(x, wt), flops, a.seconds)
        print(f"onednn: shape={m}x{n}x{k} threads={a.threads} f32_gflops={f32:.2f} bf16_gflops={bf16:.2f} torch_f32_gflops={tf32:.2f}")


if __name__ == "__main__":
    main()
