#!/usr/bin/env python3
"""PyTorch reference of bin/vit (examples/vit.c): the same vision transformer on Fashion-MNIST,
  Conv2d(1, E, P, stride P) -> tokens (T, E) in row-major patch order -> + learned positions [T][E]
  -> L x nn.TransformerEncoderLayer(E, H, F, dropout 0, GELU, batch_first, norm_first: pre-norm)
  -> LayerNorm(E) -> mean over the T tokens -> Linear(E, 10),
trained with the same optimizer and schedule as share/models/vit.opts (AdamW; linear warm-up, then cosine decay to
lr_min, per update, as src/optim/schedule.c), the same batch size and the same data (pixels / 255). Prints one line per
epoch, then `torch_<dtype>: epoch_s=... samples_per_s=... train_loss=... test_accuracy=... threads=...` (the epoch
time is the fastest epoch's, after a few untimed warm-up steps; make bench reads it beside PetNet's epoch).
Usage: vit_torch.py [--epochs N] [--limit N] [--dtypes float32,float64] [--threads N] [sizes and optimizer: --help]"""
import argparse, gzip, math, time
import numpy as np
import torch


def load(path, images):
    with gzip.open(path, 'rb') as f:
        data = f.read()
    if images:
        n = int.from_bytes(data[4:8], 'big')
        return np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, 1, 28, 28).astype(np.float64) / 255.0
    return np.frombuffer(data, dtype=np.uint8, offset=8).astype(np.int64)


class ViT(torch.nn.Module):
    def __init__(self, patch, embed, depth, heads, mlp, side=28, classes=10):
        super().__init__()
        nn = torch.nn
        self.tokens = (side // patch) ** 2
        self.embed = nn.Conv2d(1, embed, patch, stride=patch)
        self.position = nn.Parameter(torch.randn(self.tokens, embed) * 0.02)
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(embed, heads, mlp, dropout=0.0, activation='gelu', batch_first=True, norm_first=True)
                                     for _ in range(depth)])
        self.norm = nn.LayerNorm(embed)
        self.head = nn.Linear(embed, classes)

    def forward(self, x):
        x = self.embed(x)                 # (N, E, h, w)
        x = x.flatten(2).transpose(1, 2)  # (N, T, E): token t = (row, column) of the patch, row-major, as PetNet's (h, w, E) -> (T, E)
        x = x + self.position
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x).mean(dim=1))


def lr_at(t, a, total):
    """src/optim/schedule.c: warm-up (t < W) lr (t + 1) / W, then cosine to lr_min over the remaining updates"""
    if t < a.warmup:
        return a.lr * (t + 1) / a.warmup
    tp, span = t - a.warmup, total - a.warmup
    if tp >= span:
        return a.lr_min
    return a.lr_min + (a.lr - a.lr_min) * (1 + math.cos(math.pi * tp / span)) / 2


def run(dtype, X, y, Xt, yt, a):
    torch.manual_seed(a.seed)
    net = ViT(a.patch, a.embed, a.depth, a.heads, a.mlp).to(dtype)
    opt = torch.optim.AdamW(net.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    lossf = torch.nn.CrossEntropyLoss()
    X, Xt = torch.tensor(X, dtype=dtype), torch.tensor(Xt, dtype=dtype)
    y, yt = torch.tensor(y), torch.tensor(yt)
    steps = (len(y) + a.batch - 1) // a.batch
    total = a.epochs * steps
    t, best, loss_sum = 0, float('inf'), 0.0
    for e in range(a.epochs):
        perm = torch.randperm(len(y))
        net.train()
        loss_sum, t0 = 0.0, None
        for b in range(steps):
            if b == min(5, steps - 1):  # the first steps of an epoch are not timed (one-off set-up)
                t0, b0 = time.perf_counter(), b
            idx = perm[b * a.batch:(b + 1) * a.batch]
            for g in opt.param_groups:
                g['lr'] = lr_at(t, a, total)
            opt.zero_grad()
            loss = lossf(net(X[idx]), y[idx])
            loss.backward()
            opt.step()
            t += 1
            loss_sum += loss.item() * len(idx)
        secs = (time.perf_counter() - t0) * steps / (steps - b0)  # the epoch's time at the rate of its timed steps
        best = min(best, secs)
        net.eval()
        with torch.no_grad():
            correct = sum((net(Xt[i:i + 1000]).argmax(1) == yt[i:i + 1000]).sum().item() for i in range(0, len(yt), 1000))
        acc = correct / len(yt)
        print(f'epoch {e + 1} {dtype}: train_loss={loss_sum / len(y):.4f} test_accuracy={acc:.4f} epoch_s={secs:.2f}', flush=True)
    return best, loss_sum / len(y), acc, sum(p.numel() for p in net.parameters())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--patch', type=int, default=4)
    ap.add_argument('--embed', type=int, default=64)
    ap.add_argument('--depth', type=int, default=4)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--mlp', type=int, default=128)
    ap.add_argument('--epochs', type=int, default=1)
    ap.add_argument('--batch', type=int, default=128)
    ap.add_argument('--lr', type=float, default=1e-3)
    ap.add_argument('--lr-min', type=float, default=0.0)
    ap.add_argument('--warmup', type=int, default=0, help='updates of linear warm-up')
    ap.add_argument('--weight-decay', type=float, default=1e-4)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--limit', type=int, default=60000, help='training images')
    ap.add_argument('--test-limit', type=int, default=10000)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--dtypes', default='float32')
    ap.add_argument('--dir', default='/usr/share/datasets/fashion-mnist')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    X = load(f'{a.dir}/train-images-idx3-ubyte.gz', True)[:a.limit]
    y = load(f'{a.dir}/train-labels-idx1-ubyte.gz', False)[:a.limit]
    Xt = load(f'{a.dir}/t10k-images-idx3-ubyte.gz', True)[:a.test_limit]
    yt = load(f'{a.dir}/t10k-labels-idx1-ubyte.gz', False)[:a.test_limit]
    for name in a.dtypes.split(','):
        secs, loss, acc, params = run(getattr(torch, name), X, y, Xt, yt, a)
        print(f'torch_{name}: epoch_s={secs:.3f} samples_per_s={len(y) / secs:.0f} train_loss={loss:.4f} test_accuracy={acc:.4f} '
              f'params={params} threads={a.threads}')


if __name__ == '__main__':
    main()
