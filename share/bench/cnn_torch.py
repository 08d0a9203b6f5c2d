#!/usr/bin/env python3
"""PyTorch reference for `make bench`: the same CNN as share/bench/run,
  conv 32 3x3 pad 1 -> ReLU -> maxpool 2 -> conv 64 3x3 pad 1 -> ReLU -> maxpool 2 -> flatten -> dense 128 -> ReLU -> dense 10,
Adam lr 1e-3, batch 128, one epoch of Fashion-MNIST, timed in float64 and float32 on this machine's cores (after a few
untimed warm-up steps, so that one-off set-up is not counted). Prints one `torch_<dtype>: ...` line each. The dtype
bfloat16 is float32 parameters, gradients and Adam with the forward and loss under torch.autocast('cpu',
torch.bfloat16) (PyTorch sends its convolutions and matmuls to oneDNN in bfloat16), what a PyTorch user of a CPU with
bfloat16 units picks: the counterpart of -net_precision bfloat16.
Usage: cnn_torch.py [--threads N] [--limit N] [--dtypes float64,float32,bfloat16]"""
import argparse, gzip, time
import numpy as np
import torch

def load(path, images):
    with gzip.open(path, 'rb') as f:
        data = f.read()
    if images:
        n = int.from_bytes(data[4:8], 'big')
        return np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, 1, 28, 28).astype(np.float64) / 255.0
    return np.frombuffer(data, dtype=np.uint8, offset=8).astype(np.int64)

def model():
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))

def flops_per_sample():
    """Training FLOPs of one sample, counted as share/bench/run does: 2 per multiply-add of the forward convolutions
    and dense layers, the same again for dW, and for dX except for the first layer (whose input needs no gradient)."""
    conv1 = 2 * 28 * 28 * 32 * (3 * 3 * 1)
    conv2 = 2 * 14 * 14 * 64 * (3 * 3 * 32)
    dense1 = 2 * 3136 * 128
    dense2 = 2 * 128 * 10
    return 2 * conv1 + 3 * (conv2 + dense1 + dense2)

def epoch(dtype, X, y, batch, warmup=5, seed=1):
    autocast = dtype == torch.bfloat16  # float32 parameters, bfloat16 compute
    dtype = torch.float32 if autocast else dtype
    torch.manual_seed(seed)
    net = model().to(dtype)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    lossf = torch.nn.CrossEntropyLoss()
    Xt = torch.tensor(X, dtype=dtype)
    yt = torch.tensor(y)
    perm = torch.randperm(len(yt))

    def step(idx):
        opt.zero_grad()
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=autocast):
            loss = lossf(net(Xt[idx]), yt[idx])
        loss.backward()
        opt.step()
        return loss.item()

    for b in range(warmup):
        step(perm[b * batch:(b + 1) * batch])
    t0 = time.perf_counter()
    total = 0.0
    for b in range(0, len(yt), batch):
        idx = perm[b:b + batch]
        total += step(idx) * len(idx)
    return time.perf_counter() - t0, total / len(yt)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--repeat', type=int, default=1, help='epochs timed, the fastest kept (as BENCH_REPEAT does for PetNet)')
    ap.add_argument('--limit', type=int, default=60000)
    ap.add_argument('--dtypes', default='float64,float32')
    ap.add_argument('--dir', default='/usr/share/datasets/fashion-mnist')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    X = load(f'{a.dir}/train-images-idx3-ubyte.gz', True)[:a.limit]
    y = load(f'{a.dir}/train-labels-idx1-ubyte.gz', False)[:a.limit]
    flops = len(y) * flops_per_sample()
    for name in a.dtypes.split(','):
        secs, loss = min(epoch(getattr(torch, name), X, y, 128) for _ in range(a.repeat))  # the fastest of --repeat epochs
        print(f'torch_{name}: epoch_s={secs:.3f} samples_per_s={len(y) / secs:.0f} gflops={flops / secs / 1e9:.2f} '
              f'train_loss={loss:.4f} threads={a.threads}')

if __name__ == '__main__':
    main()
