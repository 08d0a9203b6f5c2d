#!/usr/bin/env python3
"""PyTorch reference of bin/charlm (examples/charlm.c) for `make bench`: the same corpus, split, vocabulary, windows,
architecture and optimizer, trained for the same number of steps; prints the validation bits per character and the
time of a training step.

Data (as examples/charlm.c): the text files of the corpus folder in sorted order (not .dat/.u8, not symlinks, not
hidden), every 10th (i % 10 == 9) held out, or the last file when there are fewer than 10; one file: its last tenth
held out. Ids: 0 for a byte the train text lacks, 1.. for the train text's bytes in increasing order. Step k draws B
window starts floor(r * (ntrain - T)) with r from PETSc's PETSCRANDER48 stream (the 48-bit LCG of drand48, seeded as
srand48(seed)), reproduced below exactly, so both programs see the same windows. Validation: K windows at 0, T, 2T, ...
of the held-out text; val_bpc = mean cross-entropy / ln 2.

Model (nanoGPT's module names; PetNet's embedding:V:E, position:P, transformer:H:4E:causal x L, layernorm,
dense:V:tokens): transformer.wte, transformer.wpe, transformer.h.N.{ln_1, attn (nn.MultiheadAttention, batch_first,
causal mask), ln_2, mlp.c_fc, mlp.c_proj (GELU, erf form)}, transformer.ln_f, lm_head (with bias). --model mlp is the
per-position stand-in bin/charlm uses while the attention layers are not in the library (embedding, layernorm,
Linear(E, 4E), GELU, Linear(4E, E), layernorm, Linear(E, V), each position on its own). Parameters start from
PyTorch's default initialisation of each module (seeded by --seed), which PetNet's layers follow (wpe N(0, 0.02^2) as
PetNet's position:P): the two programs start from different draws of the same distributions. --model gpt_nope is
the GPT without wpe (bin/charlm's arch=gpt_nope, when the library has attention but no position layer). --model
gpt_rope is the GPT without wpe whose attention rotates each head's queries and keys by their position (rotary
positions, bin/charlm's -charlm_model gpt_rope, PetNet's transformer:H:4E:causal:rotary): the halves (i, i + d/2) of a
head turned by t 10000^(-2i/d), on nn.MultiheadAttention's own parameters (rotary_attention below). Optimizer: torch.optim.Adam (PetNet's adam, PyTorch's defaults), lr --lr.

--load-petnet FILE evaluates a model saved by bin/charlm (-net_save FILE.h5) instead of training one: its tensors
under nanoGPT's names (share/python/petnet_torch.py, charlm_state_dict()) into the GPT below (or the stand-in) with
load_state_dict(strict=True), in float64, on --val-windows windows; --expect OUTPUT compares the result with the val_bpc
of bin/charlm's summary line in OUTPUT (relative 1e-9) and exits 1 when they differ.

--save-petnet FILE goes the other way: the GPT (or --model mlp, the stand-in) with random weights (every parameter
uniform, biases and layer norms too, seeded by --seed) in float64, its state_dict under nanoGPT's names written as a
PetNet model file by petnet_torch.charlm_save() (embedding, position, transformer:H:F:causal blocks, layernorm,
dense:V:tokens); prints a summary line with PyTorch's val_bpc on --val-windows windows, which
`bin/charlm -net_load FILE -charlm_iterations 0` must reproduce (tests/charlm_same.sh torch), and checks that
charlm_state_dict() reads the file back to the same tensors bit for bit.

Usage: charlm_torch.py [--corpus DIR|FILE] [--context T] [--embed E] [--heads H] [--depth L] [--iterations N]
                       [--batch B] [--lr R] [--val-windows K] [--seed S] [--threads N] [--dtype float32|float64]
                       [--autocast none|bf16]
--autocast bf16 runs each training step's forward and loss under torch.autocast('cpu', dtype=torch.bfloat16) (the
parameters, their gradients and Adam stay in --dtype): PyTorch's mixed precision, against bin/charlm -net_precision
bfloat16 (bfloat16 values, float compute, double parameters). Validation runs without autocast.
Prints: torch_charlm: model= params= context= iterations= train_loss= val_bpc= step_ms= tokens_per_s= threads= dtype=
autocast="""
import argparse, math, os, time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_corpus(path):
    def is_text(b):
        if 0 in b:
            return False
        ctrl = sum(1 for c in b if (c < 32 and chr(c) not in '\t\n\r\f\v\b\a\x1b') or c == 127)
        return 100 * ctrl <= len(b)

    def read(f):
        b = open(f, 'rb').read()
        if not b or not is_text(b):
            raise SystemExit(f'{f}: empty or not text')
        return b

    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if not n.startswith('.') and not n.endswith('.dat') and not n.endswith('.u8')
                       and not os.path.islink(os.path.join(path, n)) and os.path.isfile(os.path.join(path, n)))
        train, val = bytearray(), bytearray()
        for i, n in enumerate(names):
            isval = i % 10 == 9 if len(names) >= 10 else i == len(names) - 1
            (val if isval else train).extend(read(os.path.join(path, n)))
        return bytes(train), bytes(val)
    b = read(path)
    nval = len(b) // 10
    return b[:len(b) - nval], b[len(b) - nval:]


class Rander48:
    """PETSc's PETSCRANDER48 (drand48's generator with its own state): x <- (0x5DEECE66D x + 11) mod 2^48, r = x / 2^48"""

    def __init__(self, seed):
        self.x = (((seed >> 16) & 0xffff) << 32) | ((seed & 0xffff) << 16) | 0x330e

    def next(self):
        self.x = (0x5DEECE66D * self.x + 0xB) & ((1 << 48) - 1)
        return self.x / 2.0 ** 48


def rotary_attention(attn, x, mask, base=10000.0):
    """Self-attention of nn.MultiheadAttention attn on x (N, T, E) with rotary positions: q and k of each head (d = E/H
    features) rotated after the projection, feature i paired with i + d/2 and turned by the angle t base^(-2i/d) at
    position t; mask is added to the scores (-inf above the diagonal)"""
    N, T, E = x.shape
    H = attn.num_heads
    d = E // H
    q, k, v = (t.reshape(N, T, H, d).transpose(1, 2) for t in F.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, dim=-1))
    angle = torch.arange(T, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)[None, :]
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)

    def rotate(z):
        a, b = z[..., :d // 2], z[..., d // 2:]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)

    s = rotate(q) @ rotate(k).transpose(-1, -2) / math.sqrt(d) + mask
    return attn.out_proj((torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(N, T, E))


class Block(nn.Module):
    def __init__(self, E, H, rotary=False):
        super().__init__()
        self.ln_1 = nn.LayerNorm(E)
        self.attn = nn.MultiheadAttention(E, H, batch_first=True)
        self.ln_2 = nn.LayerNorm(E)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(E, 4 * E), c_proj=nn.Linear(4 * E, E)))
        self.rotary = rotary

    def forward(self, x, mask):
        h = self.ln_1(x)
        x = x + (rotary_attention(self.attn, h, mask) if self.rotary else self.attn(h, h, h, attn_mask=mask, need_weights=False)[0])
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    """P > 0: a learned position table of P rows (wpe); P = 0: none (bin/charlm's arch=gpt_nope, or gpt_rope with rotary)"""

    def __init__(self, V, P, E, H, L, rotary=False):
        super().__init__()
        modules = dict(wte=nn.Embedding(V, E), h=nn.ModuleList([Block(E, H, rotary) for _ in range(L)]), ln_f=nn.LayerNorm(E))
        if P:
            modules['wpe'] = nn.Embedding(P, E)
            nn.init.normal_(modules['wpe'].weight, std=0.02)  # PetNet's position:P (and nanoGPT's wpe) start N(0, 0.02^2)
        self.transformer = nn.ModuleDict(modules)
        self.lm_head = nn.Linear(E, V)

    def forward(self, idx):
        T = idx.shape[1]
        mask = torch.triu(torch.full((T, T), float('-inf'), dtype=self.lm_head.weight.dtype), diagonal=1)
        x = self.transformer.wte(idx)
        if 'wpe' in self.transformer:
            x = x + self.transformer.wpe.weight[:T]
        for block in self.transformer.h:
            x = block(x, mask)
        return self.lm_head(self.transformer.ln_f(x))


class StandIn(nn.Module):
    """bin/charlm's per-position model before the attention layers: embedding, layernorm, E->4E, gelu, 4E->E, layernorm, E->V"""

    def __init__(self, V, E):
        super().__init__()
        self.wte, self.ln_1, self.c_fc = nn.Embedding(V, E), nn.LayerNorm(E), nn.Linear(E, 4 * E)
        self.c_proj, self.ln_f, self.lm_head = nn.Linear(4 * E, E), nn.LayerNorm(E), nn.Linear(E, V)

    def forward(self, idx):
        return self.lm_head(self.ln_f(self.c_proj(F.gelu(self.c_fc(self.ln_1(self.wte(idx)))))))


def validation_bpc(model, va, T, K, batch, V):
    """Mean cross-entropy / ln 2 over K windows of the held-out ids at 0, T, 2T, ..., batch windows at a time"""
    assert K * T + 1 <= len(va), f'--val-windows {K} needs {K * T + 1} held-out characters, the corpus has {len(va)}'
    offs, total = torch.arange(T), 0.0
    with torch.no_grad():
        for k0 in range(0, K, batch):
            starts = torch.arange(k0, min(K, k0 + batch)) * T
            x, y = va[starts[:, None] + offs], va[starts[:, None] + offs + 1]
            total += F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1), reduction='sum').item()
    return total / (K * T) / math.log(2)


def evaluate_petnet(a):
    """--load-petnet: the file's model in PyTorch (float64), its val_bpc; --expect: equal to bin/charlm's"""
    import re, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python'))
    import petnet_torch
    state, arch, spec, input_shape = petnet_torch.charlm_state_dict(a.load_petnet)
    T = int(input_shape[0])
    V, E = state['transformer.wte.weight' if arch == 'gpt' else 'wte.weight'].shape
    if arch == 'gpt':
        P = state['transformer.wpe.weight'].shape[0] if 'transformer.wpe.weight' in state else 0
        L = len({k.split('.')[2] for k in state if k.startswith('transformer.h.')})
        H = int(re.search(r'(?:attention|transformer):(\d+)', spec).group(1))
        model = GPT(V, P, E, H, L, rotary=':rotary' in spec)
    else:
        model = StandIn(V, E)
    model = model.to(torch.float64)
    model.load_state_dict(state, strict=True)
    model.eval()
    train, val = read_corpus(a.corpus)
    present = sorted(set(train))
    if len(present) + 1 != V:
        raise SystemExit(f'{a.load_petnet} has a vocabulary of {V}, the corpus {a.corpus} {len(present) + 1}: give the corpus it was trained on')
    ids = np.zeros(256, dtype=np.int64)
    ids[present] = np.arange(1, len(present) + 1)
    va = torch.from_numpy(ids[np.frombuffer(val, dtype=np.uint8)])
    bpc = validation_bpc(model, va, T, a.val_windows, a.batch, V)
    print(f'torch_charlm_loaded: file={a.load_petnet} arch={arch} params={sum(p.numel() for p in model.parameters())} context={T} val_bpc={bpc:.10f}')
    if a.expect:
        line = [l for l in open(a.expect) if l.startswith('summary:')][-1]
        ref = float(re.search(r' val_bpc=(\S+)', line).group(1))
        if abs(bpc - ref) > 1e-9 * abs(ref):
            print(f'PyTorch val_bpc {bpc:.10f} differs from bin/charlm\'s {ref:.10f} ({a.expect}) by {abs(bpc - ref) / abs(ref):.2e} relative')
            return 1
        print(f'the same val_bpc as bin/charlm ({a.expect}): relative difference {abs(bpc - ref) / abs(ref):.2e}')
    return 0


def save_petnet(a):
    """--save-petnet: a model with random weights -> a PetNet model file (petnet_torch.charlm_save); PyTorch's val_bpc"""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python'))
    import petnet_torch
    torch.manual_seed(a.seed)
    train, val = read_corpus(a.corpus)
    present = sorted(set(train))
    ids = np.zeros(256, dtype=np.int64)
    ids[present] = np.arange(1, len(present) + 1)
    V, T = len(present) + 1, a.context
    model = (StandIn(V, a.embed) if a.model == 'mlp' else GPT(V, T if a.model == 'gpt' else 0, a.embed, a.heads, a.depth)).to(torch.float64)
    gen = torch.Generator().manual_seed(a.seed)
    with torch.no_grad():  # every tensor drawn, so that a tensor loaded into the wrong place changes the result
        for name, p in model.named_parameters():
            scale = 1.0 / math.sqrt(p.shape[-1]) if p.dim() > 1 else 0.3
            p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale + (1.0 if name.endswith('weight') and p.dim() == 1 else 0.0))
    model.eval()
    spec, shape = petnet_torch.charlm_save(model.state_dict(), a.save_petnet, a.heads, context=T)
    state, _, _, _ = petnet_torch.charlm_state_dict(a.save_petnet)
    ref = model.state_dict()
    same = state.keys() == ref.keys() and all(torch.equal(state[k], ref[k]) for k in ref)
    print(f'{a.save_petnet}: {spec} on {"x".join(map(str, shape))} ids; read back by charlm_state_dict(): {"the same tensors bit for bit" if same else "DIFFERENT tensors"}')
    va = torch.from_numpy(ids[np.frombuffer(val, dtype=np.uint8)])
    bpc = validation_bpc(model, va, T, a.val_windows, a.batch, V)
    print(f'summary: model=torch_charlm arch={a.model} params={sum(p.numel() for p in model.parameters())} context={T} val_bpc={bpc:.10f} vocab={V}')
    return 0 if same else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--corpus', default='/usr/share/games/fortunes')
    ap.add_argument('--model', choices=['gpt', 'gpt_nope', 'gpt_rope', 'mlp'], default='gpt')
    ap.add_argument('--context', type=int, default=128)
    ap.add_argument('--embed', type=int, default=64)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--depth', type=int, default=2)
    ap.add_argument('--iterations', type=int, default=500)
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--lr', type=float, default=1e-3)
    ap.add_argument('--val-windows', type=int, default=256)
    ap.add_argument('--seed', type=int, default=1, help='the windows (as -charlm_seed) and torch.manual_seed')
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--dtype', choices=['float32', 'float64'], default='float32')
    ap.add_argument('--autocast', choices=['none', 'bf16'], default='none',
                    help="bf16: the training step's forward and loss under torch.autocast('cpu', torch.bfloat16) (parameters, "
                         "gradients and Adam stay --dtype float32), the counterpart of bin/charlm -net_precision bfloat16")
    ap.add_argument('--load-petnet', metavar='FILE', help='evaluate a model file of bin/charlm (-net_save), no training')
    ap.add_argument('--expect', metavar='OUTPUT', help="with --load-petnet: bin/charlm's output whose val_bpc must be matched")
    ap.add_argument('--save-petnet', metavar='FILE', help='write the model with random weights as a PetNet model file, print its val_bpc, no training')
    a = ap.parse_args()
    if a.load_petnet:
        return evaluate_petnet(a)
    if a.save_petnet:
        return save_petnet(a)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dtype = getattr(torch, a.dtype)
    train, val = read_corpus(a.corpus)
    present = sorted(set(train))
    ids = np.zeros(256, dtype=np.int64)
    ids[present] = np.arange(1, len(present) + 1)
    V, T = len(present) + 1, a.context
    tr = torch.from_numpy(ids[np.frombuffer(train, dtype=np.uint8)])
    va = torch.from_numpy(ids[np.frombuffer(val, dtype=np.uint8)])
    model = (StandIn(V, a.embed) if a.model == 'mlp' else GPT(V, T if a.model == 'gpt' else 0, a.embed, a.heads, a.depth, rotary=a.model == 'gpt_rope')).to(dtype)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    rnd, nstarts = Rander48(a.seed), len(tr) - T
    offs = torch.arange(T)
    recent, times = [], []
    for it in range(a.iterations):
        starts = torch.tensor([min(int(rnd.next() * nstarts), nstarts - 1) for _ in range(a.batch)])
        x, y = tr[starts[:, None] + offs], tr[starts[:, None] + offs + 1]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=a.autocast == 'bf16'):
            loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        recent = (recent + [loss.item()])[-10:]
    bpc = validation_bpc(model, va, T, a.val_windows, a.batch, V)
    step = sorted(times)[len(times) // 2] if times else 0.0  # the median step: the machine may be shared
    nparams = sum(p.numel() for p in model.parameters())
    print(f'torch_charlm: model={a.model} params={nparams} context={T} iterations={a.iterations} train_loss={sum(recent) / max(len(recent), 1):.6f} '
          f'val_bpc={bpc:.6f} step_ms={1e3 * step:.2f} tokens_per_s={a.batch * T / step if step else 0:.0f} threads={a.threads} dtype={a.dtype} autocast={a.autocast} vocab={V}')


if __name__ == '__main__':
    raise SystemExit(main())
