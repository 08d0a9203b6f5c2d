#!/usr/bin/python3
"""PyTorch reference outputs and gradients for the convolutional layer kinds, checked by tests/test_conv.c.

Each case is a PetNet layer list (the -net_layers syntax) on an (h, w, c) input, or with the argument 3d on a
(d, h, w, c) one. The script builds the same network from standard PyTorch modules (Conv2d/3d, MaxPool2d/3d,
AvgPool2d/3d, BatchNorm1d/2d/3d, Flatten, Linear, ...), in float64,
fills it with deterministic values that the C test reproduces, and records

    y       the output for the input x                   (training mode when train = 1, else evaluation mode)
    dx      the input gradient for the output cotangent dy
    dtheta  the parameter gradient, in PetNet's parameter layout
    yeval   (cases with evalafter = 1) the output in evaluation mode after that one training pass, which
            exercises the running statistics of batch normalisation

Deterministic values (global indices, PetNet's channels-last layouts; C uses the same formulas):
    x[j]      = sin(0.7 j + 0.3)          j over the global input batch [N][h][w][c] (or [N][d][h][w][c])
    theta[i]  = 0.5 sin(1.3 i + 0.2)      i over PetNet's flat parameter vector
    dy[k]     = cos(0.9 k + 0.4)          k over the global output batch

Layout differences between PetNet (channels-last) and PyTorch (NCHW), all handled here:
    batches       ours [N][h][w][c]               torch [N][c][h][w]            torch = ours.permute(0, 3, 1, 2)
                  ours [N][d][h][w][c]            torch [N][c][d][h][w]         torch = ours.permute(0, 4, 1, 2, 3)
    conv weights  ours [out][kh][kw][cin/groups]  torch [out][cin/groups][kh][kw]  torch = ours.permute(0, 3, 1, 2)
                  ours [out][kd][kh][kw][cin/g]   torch [out][cin/g][kd][kh][kw]   torch = ours.permute(0, 4, 1, 2, 3)
    flatten       ours (h, w, c) order            torch (c, h, w) order, so the weight of a dense (Linear) layer
                  reading a flattened (h, w, c) input has its columns permuted:
                  torch = ours.reshape(out, h, w, c).permute(0, 3, 1, 2).reshape(out, c*h*w)   (and (d, h, w, c) alike)

Usage:  /usr/bin/python3 share/reference/conv_reference.py > tests/expected/conv_reference.dat
        /usr/bin/python3 share/reference/conv_reference.py 3d > tests/expected/conv3d_reference.dat
"""
import math
import sys

import torch

torch.set_default_dtype(torch.float64)

INPUT = (6, 5, 3)  # h, w, c
INPUT3 = (4, 5, 4, 2)  # d, h, w, c
NGLOBAL = 4

# name, layer list, train, evalafter
CASES = [
    ("conv_basic", "conv2d:4", 1, 0),
    ("conv_stride_pad", "conv2d:4:3:2:1", 1, 0),
    ("conv_rect", "conv2d:5:2x3:1x2:1x0", 1, 0),
    ("conv_dilation_groups", "conv2d:6:3:1:2:dilation=2:groups=3", 1, 0),
    ("conv_pointwise_nobias", "conv2d:4:1:1:0:bias=0", 1, 0),
    ("conv_pointwise_groups", "conv2d:6:1:1:0:groups=3", 1, 0),
    ("conv_strided_1x1", "conv2d:4:1:2", 1, 0),
    ("maxpool", "maxpool:2", 1, 0),
    ("maxpool_pad", "maxpool:3:2:1", 1, 0),
    ("maxpool_rect", "maxpool:2x3:1", 1, 0),
    ("avgpool", "avgpool:2:1", 1, 0),
    ("avgpool_pad", "avgpool:3:2:1", 1, 0),
    ("globalavgpool", "globalavgpool", 1, 0),
    ("batchnorm2d", "batchnorm", 1, 1),
    ("batchnorm2d_momentum", "batchnorm:0.3:0.001", 1, 1),
    ("batchnorm1d", "flatten,dense:6,batchnorm", 1, 1),
    ("cnn", "conv2d:4:3:1:1,batchnorm,relu,maxpool:2,flatten,dense:3", 1, 1),
    ("cnn_eval", "conv2d:4:3:1:1,batchnorm,tanh,avgpool:2,conv2d:3:2:1:1:groups=1,globalavgpool,dense:2", 0, 0),
]

# (d, h, w, c) volumes: conv3d (stride, padding, anisotropic kernels, dilation and groups, positional D:G, no bias,
# 1x1x1), 3-D pools with padding (count_include_pad), batchnorm 3d, globalavgpool, flatten + dense of a volume
CASES3D = [
    ("conv3d_basic", "conv3d:3", 1, 0),
    ("conv3d_stride_pad", "conv3d:4:3:2:1", 1, 0),
    ("conv3d_aniso", "conv3d:4:2x3x2:1x2x1:1x0x1:bias=0", 1, 0),
    ("conv3d_dilation_groups", "conv3d:4:3:1:2:2:2", 1, 0),
    ("conv3d_named", "conv3d:4:2:2x1x1:0:dilation=1x2x1:groups=2", 1, 0),
    ("conv3d_pointwise", "conv3d:3:1", 1, 0),
    ("maxpool3d", "maxpool:2", 1, 0),
    ("maxpool3d_pad", "maxpool:3:2:1", 1, 0),
    ("maxpool3d_aniso", "maxpool:2x1x2:1", 1, 0),
    ("avgpool3d", "avgpool:2:1", 1, 0),
    ("avgpool3d_pad", "avgpool:3:2:1", 1, 0),
    ("avgpool3d_aniso", "avgpool:2x2x1:1:1x1x0", 1, 0),
    ("globalavgpool3d", "globalavgpool", 1, 0),
    ("batchnorm3d", "batchnorm:0.3:0.001", 1, 1),
    ("cnn3d", "conv3d:4:3:1:1,batchnorm,relu,maxpool:2,flatten,dense:3", 1, 1),
    ("cnn3d_eval", "conv3d:4:3:1:1:bias=0,batchnorm,tanh,avgpool:2,conv3d:3:2:1:1,globalavgpool,dense:2", 0, 0),
]


def pair(text):
    a = text.split("x")
    return (int(a[0]), int(a[-1]))


def dims(text, n):
    """"3" -> (3,) * n, "2x3" or "2x3x4" -> its values (n of them)"""
    a = [int(v) for v in text.split("x")]
    assert len(a) in (1, n), f"{text} has {len(a)} values, not 1 or {n}"
    return tuple(a * n if len(a) == 1 else a)


class Builder:
    """Translates a PetNet layer list into torch modules, converting parameters from PetNet's layout."""

    def __init__(self, spec, shape, theta):
        self.shape = shape  # per-sample, PetNet order: (h, w, c) or (f,)
        self.theta = theta
        self.offset = 0
        self.modules = []
        self.flattened = None  # the (h, w, c) shape a flatten consumed, for the dense layer that follows
        self.grads = []  # per parameter tensor: function torch_grad -> PetNet layout (flat)
        for entry in spec.split(","):
            kind, _, args = entry.partition(":")
            getattr(self, kind)(args)

    def take(self, count):
        t = self.theta[self.offset:self.offset + count]
        self.offset += count
        return t

    def conv(self, args, nsd):
        *spatial, c = self.shape
        k, s, p, d, groups, bias = (3,) * nsd, (1,) * nsd, (0,) * nsd, (1,) * nsd, 1, True
        positional = []
        for field in args.split(":"):
            if "=" in field:
                key, value = field.split("=")
                if key == "dilation":
                    d = dims(value, nsd)
                elif key == "groups":
                    groups = int(value)
                elif key == "bias":
                    bias = int(value) != 0
            else:
                positional.append(field)
        out = int(positional[0])
        if len(positional) > 1:
            k = dims(positional[1], nsd)
        if len(positional) > 2:
            s = dims(positional[2], nsd)
        if len(positional) > 3:
            p = dims(positional[3], nsd)
        if len(positional) > 4:
            d = dims(positional[4], nsd)
        if len(positional) > 5:
            groups = int(positional[5])
        module = torch.nn.Conv2d if nsd == 2 else torch.nn.Conv3d
        conv = module(c, out, k, stride=s, padding=p, dilation=d, groups=groups, bias=bias)
        cg = c // groups
        perm = (0, nsd + 1) + tuple(range(1, nsd + 1))  # ours [out][k...][cg] -> torch [out][cg][k...]
        back = (0,) + tuple(range(2, nsd + 2)) + (1,)
        with torch.no_grad():
            conv.weight.copy_(self.take(out * math.prod(k) * cg).reshape(out, *k, cg).permute(*perm))
            self.grads.append(lambda g: g.permute(*back).reshape(-1))
            if bias:
                conv.bias.copy_(self.take(out))
                self.grads.append(lambda g: g.reshape(-1))
        self.modules.append(conv)
        self.shape = tuple((n + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i, n in enumerate(spatial)) + (out,)

    def conv2d(self, args):
        self.conv(args, 2)

    def conv3d(self, args):
        self.conv(args, 3)

    def pool(self, kind, args):
        *spatial, c = self.shape
        nsd = len(spatial)
        fields = args.split(":") if args else ["2"]
        k = dims(fields[0], nsd)
        s = dims(fields[1], nsd) if len(fields) > 1 else k
        p = dims(fields[2], nsd) if len(fields) > 2 else (0,) * nsd
        module = getattr(torch.nn, f"{kind}{nsd}d")
        self.modules.append(module(k, stride=s, padding=p))  # AvgPool: count_include_pad=True, as PetNet
        self.shape = tuple((n + 2 * p[i] - k[i]) // s[i] + 1 for i, n in enumerate(spatial)) + (c,)

    def maxpool(self, args):
        self.pool("MaxPool", args)

    def avgpool(self, args):
        self.pool("AvgPool", args)

    def globalavgpool(self, args):
        module = torch.nn.AdaptiveAvgPool2d if len(self.shape) == 3 else torch.nn.AdaptiveAvgPool3d
        self.modules += [module(1), torch.nn.Flatten()]
        self.shape = (self.shape[-1],)

    def flatten(self, args):
        # our features come in (h, w, c) order, torch's in (c, h, w): the next dense layer permutes its columns
        self.modules.append(torch.nn.Flatten())
        self.flattened = self.shape
        self.shape = (math.prod(self.shape),)

    def dense(self, args):
        if len(self.shape) > 1:  # a dense layer on an (h, w, c) or (d, h, w, c) input reads it flattened, as after flatten
            self.flatten("")
        out, fin = int(args), self.shape[0]
        lin = torch.nn.Linear(fin, out)
        w = self.take(out * fin).reshape(out, fin)
        if self.flattened:  # columns in (h, w, c) order -> torch's (c, h, w); (d, h, w, c) -> (c, d, h, w)
            *spatial, c = self.flattened
            nsd = len(spatial)
            w = w.reshape(out, *spatial, c).permute(0, nsd + 1, *range(1, nsd + 1)).reshape(out, fin)
            self.grads.append(lambda g: g.reshape(out, c, *spatial).permute(0, *range(2, nsd + 2), 1).reshape(-1))
        else:
            self.grads.append(lambda g: g.reshape(-1))
        with torch.no_grad():
            lin.weight.copy_(w)
            lin.bias.copy_(self.take(out))
        self.grads.append(lambda g: g.reshape(-1))
        self.modules.append(lin)
        self.shape = (out,)
        self.flattened = None

    def batchnorm(self, args):
        fields = [float(v) for v in args.split(":")] if args else []
        momentum = fields[0] if fields else 0.1
        eps = fields[1] if len(fields) > 1 else 1e-5
        c = self.shape[-1]
        module = {1: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm2d, 4: torch.nn.BatchNorm3d}[len(self.shape)]
        bn = module(c, eps=eps, momentum=momentum)
        with torch.no_grad():
            bn.weight.copy_(self.take(c))
            bn.bias.copy_(self.take(c))
        self.grads += [lambda g: g.reshape(-1)] * 2
        self.modules.append(bn)

    def relu(self, args):
        self.modules.append(torch.nn.ReLU())

    def tanh(self, args):
        self.modules.append(torch.nn.Tanh())


def count_parameters(spec, shape):
    big = torch.zeros(1 << 16)
    return Builder(spec, shape, big).offset


def to_torch(batch, shape):
    """PetNet batch [N][...] (flat) -> torch tensor"""
    if len(shape) > 1:
        nsd = len(shape) - 1
        return batch.reshape(-1, *shape).permute(0, nsd + 1, *range(1, nsd + 1)).contiguous()
    return batch.reshape(-1, shape[0])


def from_torch(t):
    if t.dim() > 2:
        return t.permute(0, *range(2, t.dim()), 1).reshape(-1)
    return t.reshape(-1)


def emit(name, values):
    print(f"{name} {values.numel()}")
    print("\n".join(f"{v:.17e}" for v in values.tolist()))


def run_case(name, spec, train, evalafter, shape):
    npar = count_parameters(spec, shape)
    theta = 0.5 * torch.sin(1.3 * torch.arange(npar) + 0.2)
    b = Builder(spec, shape, theta)
    model = torch.nn.Sequential(*b.modules)
    model.train(bool(train))
    nin = NGLOBAL * math.prod(shape)
    x = to_torch(torch.sin(0.7 * torch.arange(nin) + 0.3), shape).requires_grad_(True)
    y = model(x)
    nout = y.numel()
    dy = torch.cos(0.9 * torch.arange(nout) + 0.4)
    dy_t = to_torch(dy, b.shape)
    y.backward(dy_t)
    params = [p for p in model.parameters()]
    assert len(params) == len(b.grads)
    dtheta = torch.cat([f(p.grad) for f, p in zip(b.grads, params)] + [torch.zeros(0)])
    print(f"case {name} {spec} {'x'.join(map(str, shape))} {NGLOBAL} {train} {evalafter}")
    emit("y", from_torch(y.detach()))
    emit("dx", from_torch(x.grad))
    emit("dtheta", dtheta)
    if evalafter:
        model.eval()
        with torch.no_grad():
            emit("yeval", from_torch(model(x)))


def main():
    volumes = sys.argv[1:] == ["3d"]
    print("# generated by share/reference/conv_reference.py%s (PyTorch %s, float64); read by tests/test_conv.c" % (" 3d" if volumes else "", torch.__version__))
    for case in CASES3D if volumes else CASES:
        run_case(*case, INPUT3 if volumes else INPUT)


if __name__ == "__main__":
    main()
