#!/usr/bin/env python3
"""PyTorch reference for `make bench`: the same MLP (784-256-128-10 ReLU), Adam lr 1e-3, batch 128, one epoch of
Fashion-MNIST, timed in float64 and float32 on this machine's cores, and in bfloat16: float32 parameters, gradients
and Adam with the forward and loss under torch.autocast('cpu', torch.bfloat16) (its matmuls on oneDNN in bfloat16),
the counterpart of -net_precision bfloat16. Prints one `torch_<dtype>: ...` line each.
Usage: mlp_torch.py [--threads N] [--limit N] [--dtypes float64,float32,bfloat16]"""
import argparse, gzip, time
import numpy as np
import torch

def load(path, images):
    with gzip.open(path, 'rb') as f:
        data = f.read()
    if images:
        n = int.from_bytes(data[4:8], 'big')
        return np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, 784).astype(np.float64) / 255.0
    return np.frombuffer(data, dtype=np.uint8, offset=8).astype(np.int64)

def epoch(dtype, X, y, batch, seed=1):
    autocast = dtype == torch.bfloat16  # float32 parameters, bfloat16 compute
    dtype = torch.float32 if autocast else dtype
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).to(dtype)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lossf = torch.nn.CrossEntropyLoss()
    Xt = torch.tensor(X, dtype=dtype)
    yt = torch.tensor(y)
    perm = torch.randperm(len(yt))
    t0 = time.perf_counter()
    total = 0.0
    for b in range(0, len(yt), batch):
        idx = perm[b:b + batch]
        opt.zero_grad()
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=autocast):
            loss = lossf(model(Xt[idx]), yt[idx])
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
    return time.perf_counter() - t0, total / len(yt)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--repeat', type=int, default=1, help='epochs timed, the fastest kept (as BENCH_REPEAT does for PetNet)')
    ap.add_argument('--limit', type=int, default=60000)
    ap.add_argument('--dtypes', default='float64,float32,bfloat16')
    ap.add_argument('--dir', default='/usr/share/datasets/fashion-mnist')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    X = load(f'{a.dir}/train-images-idx3-ubyte.gz', True)[:a.limit]
    y = load(f'{a.dir}/train-labels-idx1-ubyte.gz', False)[:a.limit]
    # same count as share/bench/run: forward, dW, and dX except for the first layer
    flops = len(y) * (2 * 784 * 256 * 2 + 2 * 256 * 128 * 3 + 2 * 128 * 10 * 3)
    for name in a.dtypes.split(','):
        secs, loss = min(epoch(getattr(torch, name), X, y, 128) for _ in range(a.repeat))  # the fastest of --repeat epochs
        print(f'torch_{name}: epoch_s={secs:.3f} samples_per_s={len(y) / secs:.0f} gflops={flops / secs / 1e9:.2f} train_loss={loss:.4f} threads={a.threads}')

if __name__ == '__main__':
    main()
