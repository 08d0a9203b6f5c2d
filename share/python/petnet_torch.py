#!/usr/bin/python3
"""PetNet <-> PyTorch: the reference implementation of PetNet's HDF5 model files.

A model file written by NetSave(net, "model.h5") holds
    /petnet          group; attributes version (int), spec (str), input_shape (str), nparams (int), nbuffers (int)
    /<l>.<name>      one float64 dataset per tensor, flattened row-major, named as the state_dict of an
                     nn.Sequential ("0.weight", "0.bias", "2.weight", ...); attribute "shape" = "out,in"
The spec is PetNet's compact layer list (-net_layers), e.g. "dense:64,relu,dense:10"; input_shape is one
sample's shape, channels last ("784" or "28x28x1"). Inputs are flattened in that (channels-last) order
before the first layer, so no Flatten module shifts the state_dict indices.

    load(path)                        -> (model, input_shape)   an nn.Sequential in float64 with the weights
    save(model, input_shape, path)    writes a file NetLoad() reads (the spec is derived from the modules)
    build_sequential(spec, input_shape), spec_from_sequential(model), forward(model, x)

Command line:
    petnet_torch.py check MODEL.h5 DATA.h5 [--rtol 1e-12]
        evaluates the model in PyTorch on DATA's "input" [n][in] and compares with DATA's "output" [n][out]
    petnet_torch.py export SPEC INPUT_SHAPE MODEL.h5 DATA.h5 [--seed 0] [--samples 10]
        a PyTorch model with random weights -> MODEL.h5, and a random input with PyTorch's output -> DATA.h5
    petnet_torch.py selftest PETNET_PREFIX TORCH_PREFIX
        check PETNET_PREFIX.h5 against PETNET_PREFIX_data.h5 (written by PetNet), then export a PyTorch model
        to TORCH_PREFIX.h5 / TORCH_PREFIX_data.h5 and verify that it reads back unchanged (tests/io.suite)

Layer kinds: dense:N -> Linear, relu -> ReLU, leakyrelu:a -> LeakyReLU(a), tanh -> Tanh, sigmoid -> Sigmoid,
gelu -> GELU (erf form), softplus -> Softplus, identity -> Identity. PyTorch's Softplus returns x itself
above x = 20, where PetNet keeps log(1 + e^x) (a relative difference below 1e-9 there).
Needs PyTorch and h5py (Debian: apt-get install python3-torch python3-h5py).
"""
import argparse
import sys

try:
    import h5py
    import numpy as np
    import torch
except ImportError as e:  # the test suite must fail, not skip, when these are missing
    sys.exit(f"petnet_torch.py: {e}: install PyTorch and h5py (Debian: apt-get install python3-torch python3-h5py)")

FORMAT_VERSION = 1
GROUP = "petnet"

ACTIVATIONS = {
    "relu": torch.nn.ReLU,
    "tanh": torch.nn.Tanh,
    "sigmoid": torch.nn.Sigmoid,
    "gelu": lambda: torch.nn.GELU(approximate="none"),
    "softplus": torch.nn.Softplus,
    "identity": torch.nn.Identity,
}


def parse_shape(text):
    """'784' or '28x28x1' (PetNetShapeToString) -> (784,) or (28, 28, 1)."""
    return tuple(int(d) for d in text.replace(",", "x").split("x"))


def shape_to_string(shape):
    return "x".join(str(d) for d in shape)


def build_sequential(spec, input_shape):
    """The nn.Sequential (float64) equivalent to a PetNet layer list on samples of input_shape."""
    features = int(np.prod(input_shape))
    modules = []
    for entry in spec.split(","):
        kind, _, args = entry.strip().lower().partition(":")
        if kind == "dense":
            out = int(args)
            modules.append(torch.nn.Linear(features, out, dtype=torch.float64))
            features = out
        elif kind == "leakyrelu":
            modules.append(torch.nn.LeakyReLU(float(args) if args else 0.01))
        elif kind in ACTIVATIONS and not args:
            modules.append(ACTIVATIONS[kind]())
        else:
            raise ValueError(f"layer '{entry}' of '{spec}' has no PyTorch equivalent here: add it to petnet_torch.py")
    return torch.nn.Sequential(*modules)


def spec_from_sequential(model):
    """PetNet's compact layer list for an nn.Sequential of the supported modules."""
    names = {torch.nn.ReLU: "relu", torch.nn.Tanh: "tanh", torch.nn.Sigmoid: "sigmoid", torch.nn.Identity: "identity"}
    entries = []
    for m in model:
        if isinstance(m, torch.nn.Linear):
            if m.bias is None:
                raise ValueError("PetNet's dense layer has a bias: use Linear(..., bias=True)")
            entries.append(f"dense:{m.out_features}")
        elif isinstance(m, torch.nn.LeakyReLU):
            entries.append(f"leakyrelu:{m.negative_slope!r}")
        elif isinstance(m, torch.nn.GELU):
            if m.approximate != "none":
                raise ValueError("PetNet's gelu is the exact (erf) form: use GELU(approximate='none')")
            entries.append("gelu")
        elif isinstance(m, torch.nn.Softplus):
            if m.beta != 1:
                raise ValueError("PetNet's softplus has beta = 1")
            entries.append("softplus")
        elif type(m) in names:
            entries.append(names[type(m)])
        else:
            raise ValueError(f"module {m} has no PetNet layer kind")
    return ",".join(entries)


def forward(model, x):
    """x: [n][...] samples, channels last; flattened per sample as PetNet does."""
    x = torch.as_tensor(x, dtype=torch.float64)
    with torch.no_grad():
        return model(x.reshape(x.shape[0], -1))


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def load(path):
    """Reads a PetNet HDF5 model file: returns (nn.Sequential in float64, input shape tuple)."""
    with h5py.File(path, "r") as f:
        if GROUP not in f:
            raise ValueError(f"{path} is not a PetNet model file: no /{GROUP} group")
        attrs = f[GROUP].attrs
        version = int(attrs["version"])
        if version > FORMAT_VERSION:
            raise ValueError(f"{path} has format version {version}; this script reads {FORMAT_VERSION}")
        spec, input_shape = _text(attrs["spec"]), parse_shape(_text(attrs["input_shape"]))
        model = build_sequential(spec, input_shape)
        state = model.state_dict()
        for name, tensor in state.items():
            if name not in f:
                raise KeyError(f"{path} has no dataset '{name}' needed by '{spec}'")
            data = np.asarray(f[name][...], dtype=np.float64)
            if data.size != tensor.numel():
                raise ValueError(f"{path}: '{name}' has {data.size} values, {tuple(tensor.shape)} needs {tensor.numel()}")
            if "shape" in f[name].attrs and parse_shape(_text(f[name].attrs["shape"])) != tuple(tensor.shape):
                raise ValueError(f"{path}: '{name}' has shape {_text(f[name].attrs['shape'])}, expected {tuple(tensor.shape)}")
            state[name] = torch.from_numpy(data.reshape(tensor.shape).copy())
        model.load_state_dict(state)
    return model.eval(), input_shape


def save(model, input_shape, path):
    """Writes an nn.Sequential as a PetNet HDF5 model file (NetLoad() reads it on any number of ranks)."""
    spec = spec_from_sequential(model)
    state = model.state_dict()
    buffers = {name for name, _ in model.named_buffers()}
    nparams = sum(t.numel() for name, t in state.items() if name not in buffers)
    nbuffers = sum(t.numel() for name, t in state.items() if name in buffers)
    with h5py.File(path, "w") as f:
        group = f.create_group(GROUP)
        # fixed-length strings and 32-bit ints, as PETSc's HDF5 viewer reads them
        group.attrs["version"] = np.int32(FORMAT_VERSION)
        group.attrs["spec"] = np.bytes_(spec)
        group.attrs["input_shape"] = np.bytes_(shape_to_string(input_shape))
        group.attrs["nparams"] = np.int32(nparams)
        group.attrs["nbuffers"] = np.int32(nbuffers)
        for name, tensor in state.items():
            dataset = f.create_dataset(name, data=tensor.detach().to(torch.float64).reshape(-1).numpy())
            dataset.attrs["shape"] = np.bytes_(",".join(str(d) for d in tensor.shape))


def relative_error(y, ref):
    y, ref = np.asarray(y), np.asarray(ref)
    return float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))


def check(model_path, data_path, rtol):
    model, input_shape = load(model_path)
    with h5py.File(data_path, "r") as f:
        x, ref = f["input"][...], f["output"][...]
    n = x.size // int(np.prod(input_shape))
    y = forward(model, x.reshape((n,) + input_shape)).numpy()
    err = relative_error(y.reshape(-1), ref.reshape(-1))
    ok = err <= rtol
    print(f"{model_path}: PyTorch float64 vs PetNet on {n} samples: max |diff| / max |y| = {err:.3e} ({'<=' if ok else '>'} {rtol:g})")
    return ok


def export(spec, input_shape, model_path, data_path, seed=0, samples=10):
    torch.manual_seed(seed)
    model = build_sequential(spec, input_shape).eval()
    with torch.no_grad():  # biases too, so that loading them is tested
        for p in model.parameters():
            p.uniform_(-0.8, 0.8)
    x = torch.rand((samples,) + tuple(input_shape), dtype=torch.float64) * 3 - 1.5
    save(model, input_shape, model_path)
    with h5py.File(data_path, "w") as f:
        f.create_dataset("input", data=x.reshape(samples, -1).numpy())
        f.create_dataset("output", data=forward(model, x).numpy())
    return model


def selftest(petnet_prefix, torch_prefix, rtol=1e-12):
    ok = check(petnet_prefix + ".h5", petnet_prefix + "_data.h5", rtol)
    spec = "dense:9,gelu,dense:7,leakyrelu:0.2,dense:5,softplus,dense:4,sigmoid,dense:4,tanh,dense:3,relu,dense:3,identity,dense:2"
    model = export(spec, (5,), torch_prefix + ".h5", torch_prefix + "_data.h5", seed=3)
    again, shape = load(torch_prefix + ".h5")
    same = shape == (5,) and spec_from_sequential(again) == spec and all(
        torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    print(f"{torch_prefix}.h5: PyTorch -> HDF5 -> PyTorch round trip of '{spec}' {'exact' if same else 'DIFFERS'}")
    return ok and same


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--rtol", type=float, default=1e-12)
    p = sub.add_parser("export")
    p.add_argument("spec")
    p.add_argument("input_shape")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--samples", type=int, default=10)
    p = sub.add_parser("selftest")
    p.add_argument("petnet_prefix")
    p.add_argument("torch_prefix")
    args, _ = parser.parse_known_args()  # the test runner appends PETSc options: ignore them
    if args.command == "check":
        ok = check(args.model, args.data, args.rtol)
    elif args.command == "export":
        export(args.spec, parse_shape(args.input_shape), args.model, args.data, args.seed, args.samples)
        ok = True
    else:
        ok = selftest(args.petnet_prefix, args.torch_prefix)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
