#!/usr/bin/python3
"""PyTorch reference outputs and gradients for the convolutional layer kinds, checked by tests/test_conv.c.

Each case is a PetNet layer list (the -net_layers syntax) on an (h, w, c) input. The script builds the same network
from standard PyTorch modules (Conv2d, MaxPool2d, AvgPool2d, BatchNorm1d/2d, Flatten, Linear, ...), in float64,
fills it with deterministic values that the C test reproduces, and records

    y       the output for the input x                   (training mode when train = 1, else evaluation mode)
    dx      the input gradient for the output cotangent dy
    dtheta  the parameter gradient, in PetNet's parameter layout
    yeval   (cases with evalafter = 1) the output in evaluation mode after that one training pass, which
            exercises the running statistics of batch normalisation

Deterministic values (global indices, PetNet's channels-last layouts; C uses the same formulas):
    x[j]      = sin(0.7 j + 0.3)          j over the global input batch [N][h][w][c]
    theta[i]  = 0.5 sin(1.3 i + 0.2)      i over PetNet's flat parameter vector
    dy[k]     = cos(0.9 k + 0.4)          k over the global output batch

Layout differences between PetNet (channels-last) and PyTorch (NCHW), all handled here:
    batches       ours [N][h][w][c]               torch [N][c][h][w]            torch = ours.permute(0, 3, 1, 2)
    conv2d weight ours [out][kh][kw][cin/groups]  torch [out][cin/groups][kh][kw]  torch = ours.permute(0, 3, 1, 2)
    flatten       ours (h, w, c) order            torch (c, h, w) order, so the weight of a dense (Linear) layer
                  reading a flattened (h, w, c) input has its columns permuted:
                  torch = ours.reshape(out, h, w, c).permute(0, 3, 1, 2).reshape(out, c*h*w)

Usage:  /usr/bin/python3 share/reference/conv_reference.py > tests/expected/conv_reference.dat
"""
import math

import torch

torch.set_default_dtype(torch.float64)

INPUT = (6, 5, 3)  # h, w, c
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


def pair(text):
    a = text.split("x")
    return (int(a[0]), int(a[-1]))


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

    def conv2d(self, args):
        h, w, c = self.shape
        k, s, p, d, groups, bias = (3, 3), (1, 1), (0, 0), (1, 1), 1, True
        positional = []
        for field in args.split(":"):
            if "=" in field:
                key, value = field.split("=")
                if key == "dilation":
                    d = pair(value)
                elif key == "groups":
                    groups = int(value)
                elif key == "bias":
                    bias = int(value) != 0
            else:
                positional.append(field)
        out = int(positional[0])
        if len(positional) > 1:
            k = pair(positional[1])
        if len(positional) > 2:
            s = pair(positional[2])
        if len(positional) > 3:
            p = pair(positional[3])
        conv = torch.nn.Conv2d(c, out, k, stride=s, padding=p, dilation=d, groups=groups, bias=bias)
        cg = c // groups
        with torch.no_grad():
            conv.weight.copy_(self.take(out * k[0] * k[1] * cg).reshape(out, k[0], k[1], cg).permute(0, 3, 1, 2))
            self.grads.append(lambda g: g.permute(0, 2, 3, 1).reshape(-1))
            if bias:
                conv.bias.copy_(self.take(out))
                self.grads.append(lambda g: g.reshape(-1))
        self.modules.append(conv)
        ho = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
        wo = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
        self.shape = (ho, wo, out)

    def pool(self, module, args):
        h, w, c = self.shape
        fields = args.split(":") if args else ["2"]
        k = pair(fields[0])
        s = pair(fields[1]) if len(fields) > 1 else k
        p = pair(fields[2]) if len(fields) > 2 else (0, 0)
        self.modules.append(module(k, stride=s, padding=p))
        self.shape = ((h + 2 * p[0] - k[0]) // s[0] + 1, (w + 2 * p[1] - k[1]) // s[1] + 1, c)

    def maxpool(self, args):
        self.pool(torch.nn.MaxPool2d, args)

    def avgpool(self, args):
        self.pool(torch.nn.AvgPool2d, args)  # count_include_pad=True, as PetNet

    def globalavgpool(self, args):
        self.modules += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()]
        self.shape = (self.shape[2],)

    def flatten(self, args):
        # our features come in (h, w, c) order, torch's in (c, h, w): the next dense layer permutes its columns
        self.modules.append(torch.nn.Flatten())
        self.flattened = self.shape
        self.shape = (math.prod(self.shape),)

    def dense(self, args):
        if len(self.shape) == 3:  # a dense layer on an (h, w, c) input reads it flattened, as after flatten
            self.flatten("")
        out, fin = int(args), self.shape[0]
        lin = torch.nn.Linear(fin, out)
        w = self.take(out * fin).reshape(out, fin)
        if self.flattened:  # columns in (h, w, c) order -> torch's (c, h, w)
            h, wd, c = self.flattened
            w = w.reshape(out, h, wd, c).permute(0, 3, 1, 2).reshape(out, fin)
            self.grads.append(lambda g: g.reshape(out, c, h, wd).permute(0, 2, 3, 1).reshape(-1))
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
        bn = (torch.nn.BatchNorm2d if len(self.shape) == 3 else torch.nn.BatchNorm1d)(c, eps=eps, momentum=momentum)
        with torch.no_grad():
            bn.weight.copy_(self.take(c))
            bn.bias.copy_(self.take(c))
        self.grads += [lambda g: g.reshape(-1)] * 2
        self.modules.append(bn)

    def relu(self, args):
        self.modules.append(torch.nn.ReLU())

    def tanh(self, args):
        self.modules.append(torch.nn.Tanh())


def count_parameters(spec):
    big = torch.zeros(1 << 16)
    return Builder(spec, INPUT, big).offset


def to_torch(batch, shape):
    """PetNet batch [N][...] (flat) -> torch tensor"""
    if len(shape) == 3:
        h, w, c = shape
        return batch.reshape(-1, h, w, c).permute(0, 3, 1, 2).contiguous()
    return batch.reshape(-1, shape[0])


def from_torch(t):
    if t.dim() == 4:
        return t.permute(0, 2, 3, 1).reshape(-1)
    return t.reshape(-1)


def emit(name, values):
    print(f"{name} {values.numel()}")
    print("\n".join(f"{v:.17e}" for v in values.tolist()))


def run_case(name, spec, train, evalafter):
    npar = count_parameters(spec)
    theta = 0.5 * torch.sin(1.3 * torch.arange(npar) + 0.2)
    b = Builder(spec, INPUT, theta)
    model = torch.nn.Sequential(*b.modules)
    model.train(bool(train))
    nin = NGLOBAL * math.prod(INPUT)
    x = to_torch(torch.sin(0.7 * torch.arange(nin) + 0.3), INPUT).requires_grad_(True)
    y = model(x)
    nout = y.numel()
    dy = torch.cos(0.9 * torch.arange(nout) + 0.4)
    dy_t = to_torch(dy, b.shape)
    y.backward(dy_t)
    params = [p for p in model.parameters()]
    assert len(params) == len(b.grads)
    dtheta = torch.cat([f(p.grad) for f, p in zip(b.grads, params)] + [torch.zeros(0)])
    print(f"case {name} {spec} {'x'.join(map(str, INPUT))} {NGLOBAL} {train} {evalafter}")
    emit("y", from_torch(y.detach()))
    emit("dx", from_torch(x.grad))
    emit("dtheta", dtheta)
    if evalafter:
        model.eval()
        with torch.no_grad():
            emit("yeval", from_torch(model(x)))


def main():
    print("# generated by share/reference/conv_reference.py (PyTorch %s, float64); read by tests/test_conv.c" % torch.__version__)
    for case in CASES:
        run_case(*case)


if __name__ == "__main__":
    main()
